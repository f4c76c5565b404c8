/* fuzz_muon_ns.c - the Newton-Schulz schedule functions: muon_ns_preset, muon_ns_transfer,
 * muon_ns_min_steps, muon_sv_quantile, muon_ns_choose, muon_status_string.
 * Checks: outputs untouched on an error (and on UNREACHABLE); min_steps in {-1} or
 * 1..max_steps; the chosen schedule's transfer meets tau at the quantile; a quantile lies
 * between the smallest and the largest value; the inputs never change. */
#include "muon.h"
#include "fuzz_common.h"

static muon_ns_config take_ns(fz_in *in)
{
    muon_ns_config ns;
    uint8_t kind = fz_u8(in);
    static const double ord_safety[] = {1.0, 1.01, 0.0, 1.5, 2.0};
    static const double ord_eps[] = {1e-7, 0.0, 1e-3};
    static const double ord_coef[] = {3.4445, -4.7750, 2.0315, 1.5, -0.5, 0.0, 2.0, -1.5, 0.5, 1.875, -1.25, 0.375};
    int i;
    if (kind < 128) return muon_ns_preset((muon_ns_kind)(kind % 5), (int)(fz_u8(in) % 40) - 2);
    memset(&ns, 0, sizeof ns);
    ns.count = (int)(fz_u8(in) % 36) - 2;
    ns.steps = (int)(fz_u8(in) % 70) - 2;
    if (fz_u8(in) == 255) ns.steps = MUON_NS_MAX_STEPS + (int)(fz_u8(in) % 3) - 1;
    ns.mode = (muon_ns_mode)(fz_u8(in) % 3);
    ns.safety = fz_param(in, ord_safety, 5);
    ns.eps = fz_param(in, ord_eps, 3);
    for (i = 0; i < MUON_NS_MAX_TRIPLES && i < ns.count; i++) {
        ns.coeffs[i][0] = fz_param(in, ord_coef, 12);
        ns.coeffs[i][1] = fz_param(in, ord_coef, 12);
        ns.coeffs[i][2] = fz_param(in, ord_coef, 12);
    }
    return ns;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    static const double ord_sigma[] = {0.5, 1.0, 0.01, 1e-4, 0.3, 0.9, 1e-8};
    static const double ord_tau[] = {0.5, 0.7, 0.9, 0.2, 0.99};
    static const double ord_q[] = {0.0, 0.5, 1.0, 0.1, 0.25, 0.9};
    muon_ns_config ns = take_ns(&in), cands[4], out, out0;
    double sigma = fz_param(&in, ord_sigma, 7), tau = fz_param(&in, ord_tau, 5), q = fz_param(&in, ord_q, 6);
    int max_steps = (int)(fz_u8(&in) % 60) - 2, k, i;
    size_t n = fz_u8(&in) % 12, count = fz_u8(&in) % 5, idx = 12345, j;
    double sv[12], sv0[12], qv = -7.0;
    muon_ns_config cands0[4];
    muon_status st;
    fz_snap snap;

    (void)muon_status_string((muon_status)(fz_u8(&in) % 10));
    (void)muon_ns_transfer(&ns, sigma);
    (void)muon_ns_transfer(NULL, sigma);
    k = muon_ns_min_steps(&ns, sigma, tau, max_steps);
    FZ_CHECK(k == -1 || (k >= 1 && k <= max_steps), "min_steps %d (max %d)", k, max_steps);
    if (k >= 1) {
        muon_ns_config nk = ns;
        double f;
        nk.steps = k;
        f = muon_ns_transfer(&nk, sigma);
        FZ_CHECK(f >= tau || f != f, "min_steps %d but f_K(sigma) = %.17g < tau %.17g", k, f, tau);
    }
    /* singular values: sorted non-increasing mostly, sometimes not */
    {
        fz_valgen g = fz_take_valgen(&in);
        for (j = 0; j < n; j++) sv[j] = fabs((double)fz_value(&g, &in, j));
        if (fz_u8(&in) % 4) /* sort */
            for (j = 1; j < n; j++)
                for (i = (int)j; i > 0 && sv[i] > sv[i - 1]; i--) {
                    double t = sv[i];
                    sv[i] = sv[i - 1];
                    sv[i - 1] = t;
                }
        memcpy(sv0, sv, sizeof sv);
    }
    st = muon_sv_quantile(sv, n, q, &qv);
    FZ_CHECK(memcmp(sv, sv0, sizeof sv) == 0, "sv changed");
    if (st != MUON_OK) FZ_CHECK(qv == -7.0, "quantile written on error %d", (int)st);
    else FZ_CHECK(n > 0 && qv <= sv[0] && qv >= sv[n - 1], "quantile %.17g outside [%g, %g]", qv, sv[n - 1], sv[0]);

    for (j = 0; j < count; j++) cands[j] = take_ns(&in);
    memcpy(cands0, cands, sizeof cands);
    memset(&out, 0xA5, sizeof out);
    out0 = out;
    snap = fz_take_snap(&out, sizeof out);
    st = muon_ns_choose(sv, n, q, tau, max_steps, count ? cands : NULL, count, &out, (fz_u8(&in) & 1) ? &idx : NULL);
    FZ_CHECK(memcmp(cands, cands0, sizeof cands) == 0 && memcmp(sv, sv0, sizeof sv) == 0, "inputs changed");
    if (st != MUON_OK) {
        FZ_CHECK(fz_snap_same(&snap) && idx == 12345, "out or index written on status %d", (int)st);
    } else {
        FZ_CHECK(out.steps >= 1 && out.steps <= max_steps, "chosen steps %d", out.steps);
        FZ_CHECK(idx == 12345 || idx < (count ? count : 4), "index %zu", idx);
    }
    (void)out0;
    fz_snap_free(&snap);
    return 0;
}
