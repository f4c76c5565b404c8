/* bench_cblas_tu.c - the second translation unit of bench/bench.c: muon.h compiled with
 * MUON_USE_CBLAS (its Newton-Schulz products go to cblas_ssyrk / cblas_sgemm), private to this
 * file (MUON_STATIC), so one benchmark binary holds both the built-in and the CBLAS build. */
#define MUON_STATIC
#define MUON_USE_CBLAS
#define MUON_IMPLEMENTATION
#include "muon.h"

size_t bench_cblas_ns_workspace_size(size_t rows, size_t cols);
int bench_cblas_ns(const float *G, size_t rows, size_t cols, float *out, void *ws, size_t ws_bytes);
int bench_cblas_ns_gram(const float *G, size_t rows, size_t cols, float *out, void *ws, size_t ws_bytes);

size_t bench_cblas_ns_workspace_size(size_t rows, size_t cols)
{
    return muon_orthogonalize_workspace_size(rows, cols);
}

int bench_cblas_ns(const float *G, size_t rows, size_t cols, float *out, void *ws, size_t ws_bytes)
{
    return (int)muon_orthogonalize_ws(G, rows, cols, cols, NULL, out, cols, ws, ws_bytes);
}

/* The opt-in Gram Newton-Schulz (muon_ns_config.method = MUON_NS_GRAM, default restart). */
int bench_cblas_ns_gram(const float *G, size_t rows, size_t cols, float *out, void *ws, size_t ws_bytes)
{
    muon_ns_config ns = muon_ns_preset(MUON_NS_JORDAN, 5);
    ns.method = MUON_NS_GRAM;
    return (int)muon_orthogonalize_ws(G, rows, cols, cols, &ns, out, cols, ws, ws_bytes);
}
