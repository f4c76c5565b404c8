/* test_spectra.c - spectra.h (the block norms of issue 50) on matrices of known spectrum: the
 * expected ||W||_2, ||W||_F, row-magnitude factor, row-coherence factor and H_inf are derived
 * here from the construction (W = U diag(s) V^T with orthonormal U, V from tests/test.h; a rank
 * one a b^T; orthogonal rows of given norms; identical rows), never from the library's SVD; and
 * the log rows of a model, one per block matrix in order, equal to spectra_matrix's values. */
#include "tests/test.h"

#include "spectra.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 2e-6 /* relative: W is rounded to float (6e-8) and the library's sums are double */

/* 1 when every quantity of got is within TOL of want (H_inf: absolute, it is a log) */
static int norms_near(const spectra_norms *got, const spectra_norms *want)
{
    return t__near(got->frob, want->frob, 0, TOL) && t__near(got->spectral, want->spectral, 0, TOL) &&
           t__near(got->row_factor, want->row_factor, 0, TOL) && t__near(got->coherence, want->coherence, 0, TOL) &&
           t__near(got->min_entropy, want->min_entropy, TOL, 0);
}

static void print_norms(const char *what, const spectra_norms *s)
{
    fprintf(stderr, "  %s: frob %.9g spectral %.9g row %.9g coherence %.9g H_inf %.9g\n", what, s->frob, s->spectral,
            s->row_factor, s->coherence, s->min_entropy);
}

static void check_case(const char *name, const float *W, size_t m, size_t n, const spectra_norms *want)
{
    spectra_norms got;
    gpt_status s = spectra_matrix(W, m, n, n, &got);
    CHECK_MSG(s == GPT_OK, "%s: status %s", name, gpt_status_string(s));
    if (s != GPT_OK) return;
    CHECK_MSG(norms_near(&got, want), "%s", name);
    if (!norms_near(&got, want)) print_norms("got", &got), print_norms("want", want);
    /* the decomposition's identity and ranges, whatever the matrix */
    CHECK_NEAR(got.row_factor * got.coherence, got.spectral, 0, 1e-12);
    CHECK(got.coherence >= 1.0 - 1e-12 && got.coherence <= sqrt((double)m) + 1e-12);
    CHECK(got.spectral <= got.frob * (1 + 1e-12) && got.min_entropy >= -1e-12);
}

/* W = U diag(s) V^T (m x n, k = min(m, n) singular values s, non-increasing): ||W||_2 = s_1,
 * ||W||_F^2 = sum s^2, H_inf = log(sum s^2 / s_1^2); row i's norm^2 = sum_k U_ik^2 s_k^2 (V^T has
 * orthonormal rows), so row factor = max of those and coherence = s_1 / row factor. */
static void test_known_spectrum(void)
{
    static const size_t shapes[3][2] = {{12, 7}, {7, 12}, {64, 64}};
    int c;
    t_rng rng = {50};
    for (c = 0; c < 3; c++) {
        size_t m = shapes[c][0], n = shapes[c][1], k = m < n ? m : n, i, j, l;
        double *U = (double *)malloc(m * k * sizeof(double)), *V = (double *)malloc(n * k * sizeof(double));
        double *s = (double *)malloc(k * sizeof(double)), ss = 0.0, rmax = 0.0;
        float *W = (float *)malloc(m * n * sizeof(float));
        spectra_norms want;
        char name[64];
        if (!U || !V || !s || !W) exit(2);
        t_orthonormal(&rng, m, k, U);
        t_orthonormal(&rng, n, k, V);
        for (l = 0; l < k; l++) s[l] = 5.0 * pow(0.7, (double)l), ss += s[l] * s[l];
        for (i = 0; i < m; i++) {
            double r2 = 0.0;
            for (j = 0; j < n; j++) {
                double w = 0.0;
                for (l = 0; l < k; l++) w += U[i * k + l] * s[l] * V[j * k + l];
                W[i * n + j] = (float)w;
            }
            for (l = 0; l < k; l++) r2 += U[i * k + l] * U[i * k + l] * s[l] * s[l];
            if (sqrt(r2) > rmax) rmax = sqrt(r2);
        }
        want.spectral = s[0], want.frob = sqrt(ss), want.min_entropy = log(ss / (s[0] * s[0]));
        want.row_factor = rmax, want.coherence = s[0] / rmax;
        snprintf(name, sizeof name, "U diag(s) V^T %lux%lu", (unsigned long)m, (unsigned long)n);
        check_case(name, W, m, n, &want);
        /* the comparison can fail: s_1 raised by 1e-4 relative is told apart */
        {
            spectra_norms got;
            for (i = 0; i < m * n; i++) {
                double w = 0.0;
                for (l = 0; l < k; l++) w += U[i / n * k + l] * s[l] * (l == 0 ? 1.0001 : 1.0) * V[i % n * k + l];
                W[i] = (float)w;
            }
            CHECK(spectra_matrix(W, m, n, n, &got) == GPT_OK && !norms_near(&got, &want));
        }
        free(U), free(V), free(s), free(W);
    }
}

/* a b^T: one singular value ||a|| ||b||; rows a_i b, so row factor max|a_i| ||b||, coherence
 * ||a|| / max|a_i|; H_inf = 0. */
static void test_rank_one(void)
{
    enum { M = 9, N = 5 };
    static const double a[M] = {0.5, -2.0, 1.0, 0.25, 3.0, -1.5, 0.75, 2.0, -0.125};
    static const double b[N] = {1.0, -0.5, 2.0, 0.25, -1.0};
    float W[M * N];
    double na = 0.0, nb = 0.0, amax = 0.0;
    spectra_norms want;
    int i, j;
    for (i = 0; i < M; i++) na += a[i] * a[i], amax = fabs(a[i]) > amax ? fabs(a[i]) : amax;
    for (j = 0; j < N; j++) nb += b[j] * b[j];
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) W[i * N + j] = (float)(a[i] * b[j]);
    want.spectral = want.frob = sqrt(na) * sqrt(nb), want.min_entropy = 0.0;
    want.row_factor = amax * sqrt(nb), want.coherence = sqrt(na) / amax;
    check_case("rank one", W, M, N, &want);
}

/* rows r_i q_i with orthonormal q_i: singular values r_i, coherence 1; and m identical unit
 * rows c q: one singular value c sqrt(m), coherence sqrt(m). */
static void test_orthogonal_and_identical_rows(void)
{
    enum { M = 6, N = 10 };
    double Q[N * M], r[M] = {0.5, 4.0, 1.0, 2.5, 0.1, 3.0}, rr = 0.0;
    float W[M * N];
    spectra_norms want;
    t_rng rng = {7};
    int i, j;
    t_orthonormal(&rng, N, M, Q); /* columns q_i */
    for (i = 0; i < M; i++) {
        rr += r[i] * r[i];
        for (j = 0; j < N; j++) W[i * N + j] = (float)(r[i] * Q[j * M + i]);
    }
    want.spectral = want.row_factor = 4.0, want.coherence = 1.0;
    want.frob = sqrt(rr), want.min_entropy = log(rr / 16.0);
    check_case("orthogonal rows", W, M, N, &want);
    for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) W[i * N + j] = (float)(2.0 * Q[j * M]);
    want.spectral = want.frob = 2.0 * sqrt((double)M), want.row_factor = 2.0;
    want.coherence = sqrt((double)M), want.min_entropy = 0.0;
    check_case("identical rows", W, M, N, &want);
}

/* zero and non-finite matrices: a status, *out untouched */
static void test_bad_input(void)
{
    float W[12] = {0};
    spectra_norms out, before;
    memset(&out, 0x5A, sizeof out);
    before = out;
    CHECK(spectra_matrix(W, 3, 4, 4, &out) == GPT_ERR_DOMAIN && memcmp(&out, &before, sizeof out) == 0);
    W[5] = (float)NAN;
    CHECK(spectra_matrix(W, 3, 4, 4, &out) == GPT_ERR_DOMAIN && memcmp(&out, &before, sizeof out) == 0);
    CHECK(spectra_matrix(W, 3, 4, 3, &out) == GPT_ERR_SIZE);
    CHECK(spectra_matrix(NULL, 3, 4, 4, &out) == GPT_ERR_NULL);
}

/* The log: the header, then one row per block matrix in the model's order, each the
 * spectra_matrix values of that tensor printed with %.17g (read back exactly). */
static void test_log_rows(void)
{
    gpt_config cfg;
    gpt_layout L;
    float *params;
    FILE *f = tmpfile();
    char line[512], err[256];
    int i, rows = 0;
    memset(&cfg, 0, sizeof cfg);
    cfg.n_layers = 2, cfg.d_model = 32, cfg.n_heads = 2, cfg.seq_len = 16, cfg.vocab_size = 50;
    CHECK(gpt_config_resolve(&cfg) == GPT_OK);
    L = gpt_layout_of(&cfg);
    params = (float *)malloc(L.n_params * sizeof(float));
    if (!params || !f) exit(2);
    gpt_init_params(&cfg, params, 3);
    spectra_log_header(f);
    CHECK(spectra_log_rows(f, 40, &cfg, params, err, sizeof err) == GPT_OK);
    rewind(f);
    CHECK(fgets(line, sizeof line, f) && strcmp(line, "step,tensor,rows,cols,frob,spectral,row_factor,coherence,min_entropy\n") == 0);
    for (i = 0; i < L.n_tensors; i++) {
        gpt_tensor t;
        spectra_norms s, g;
        long step;
        unsigned long m, n;
        char name[40];
        gpt_tensor_info(&cfg, i, &t);
        if (t.kind != GPT_TENSOR_BLOCK_MATRIX) continue;
        CHECK(spectra_matrix(params + t.offset, t.rows, t.cols, t.cols, &s) == GPT_OK);
        CHECK(fgets(line, sizeof line, f) != NULL);
        CHECK(sscanf(line, "%ld,%39[^,],%lu,%lu,%lf,%lf,%lf,%lf,%lf", &step, name, &m, &n, &g.frob, &g.spectral,
                     &g.row_factor, &g.coherence, &g.min_entropy) == 9);
        CHECK(step == 40 && strcmp(name, t.name) == 0 && m == t.rows && n == t.cols);
        CHECK(g.frob == s.frob && g.spectral == s.spectral && g.row_factor == s.row_factor &&
              g.coherence == s.coherence && g.min_entropy == s.min_entropy);
        rows++;
    }
    CHECK(rows == 14 && fgets(line, sizeof line, f) == NULL);
    /* a non-finite weight names its tensor */
    params[L.layer0 + L.layer_stride + L.in_layer[GPT_WV]] = (float)NAN;
    CHECK(spectra_log_rows(f, 41, &cfg, params, err, sizeof err) == GPT_ERR_DOMAIN && strstr(err, "layers.1.wv"));
    fclose(f);
    free(params);
}

int main(void)
{
    RUN(test_known_spectrum);
    RUN(test_rank_one);
    RUN(test_orthogonal_and_identical_rows);
    RUN(test_bad_input);
    RUN(test_log_rows);
    return TEST_REPORT();
}
