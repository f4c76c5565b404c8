/* spectra.c - the block matrices' norms and spectra (spectra.h): muon.h's
 * muon_spectral_decomposition for ||W||_2, the row factors and H_inf; ||W||_F here. */
#include "spectra.h"

#include "muon.h"

#include <math.h>

gpt_status spectra_matrix(const float *W, size_t rows, size_t cols, size_t ld, spectra_norms *out)
{
    muon_decomposition d;
    muon_status ms;
    double ss = 0.0;
    size_t i, j;
    if (!W || !out) return GPT_ERR_NULL;
    if (rows == 0 || cols == 0 || ld < cols) return GPT_ERR_SIZE;
    ms = muon_spectral_decomposition(W, rows, cols, ld, &d);
    if (ms == MUON_ERR_NOMEM) return GPT_ERR_NOMEM;
    if (ms != MUON_OK) return GPT_ERR_DOMAIN; /* W == 0, NaN/Inf */
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) ss += (double)W[i * ld + j] * (double)W[i * ld + j];
    out->frob = sqrt(ss);
    out->spectral = d.spectral_norm;
    out->row_factor = d.row_factor;
    out->coherence = d.coherence;
    out->min_entropy = d.min_entropy;
    return GPT_OK;
}

void spectra_log_header(FILE *f) { fputs("step,tensor,rows,cols,frob,spectral,row_factor,coherence,min_entropy\n", f); }

gpt_status spectra_log_rows(FILE *f, long step, const gpt_config *cfg, const float *params, char *err, size_t errlen)
{
    gpt_config c = *cfg;
    gpt_layout L;
    gpt_status gs;
    int i;
    if (gpt_config_resolve(&c) != GPT_OK) return gpt_fail(err, errlen, GPT_ERR_CONFIG, "block norms: bad model config");
    L = gpt_layout_of(&c);
    for (i = 0; i < L.n_tensors; i++) {
        gpt_tensor t;
        spectra_norms s;
        if (gpt_tensor_info(&c, i, &t) != GPT_OK) return gpt_fail(err, errlen, GPT_ERR_CONFIG, "block norms: tensor %d", i);
        if (t.kind != GPT_TENSOR_BLOCK_MATRIX) continue;
        gs = spectra_matrix(params + t.offset, t.rows, t.cols, t.cols, &s);
        if (gs != GPT_OK)
            return gpt_fail(err, errlen, gs, "step %ld: block norms of %s failed: %s", step, t.name, gpt_status_string(gs));
        fprintf(f, "%ld,%s,%zu,%zu,%.17g,%.17g,%.17g,%.17g,%.17g\n", step, t.name, t.rows, t.cols, s.frob, s.spectral,
                s.row_factor, s.coherence, s.min_entropy);
    }
    return GPT_OK;
}
