/* fuzz_rn_hilbert.c - rn_hilbert_logits, rn_hilbert_probs, rn_tv_bound, rn_status_string.
 * Checks: *out untouched on an error; inputs never change; NaN/Inf never OK, non-positive
 * probabilities never OK; an OK distance is >= 0 and equals osc(z1 - z0) (logits, computed
 * here in double) / osc(log p - log q) (probabilities) to 1e-12 relative; tv_bound in [0, 1]
 * for d >= 0 and NaN for d < 0. */
#include "rownorm.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in);
    size_t n = fz_u8(&in) % 40, i;
    fz_valgen g = fz_take_valgen(&in);
    float *a = (float *)fz_malloc(n * sizeof(float)), *b = (float *)fz_malloc(n * sizeof(float));
    double out = -5.0, lo = INFINITY, hi = -INFINITY;
    int finite = 1, positive = 1;
    fz_snap sa, sb;
    rn_status st;
    static const double ord_d[] = {0.0, 1.0, 0.5, 10.0, 1e-9, 40.0};

    (void)rn_status_string((rn_status)(fz_u8(&in) % 10));
    {
        double d = fz_param(&in, ord_d, 6), t = rn_tv_bound(d);
        if (d >= 0.0) FZ_CHECK(t >= 0.0 && t <= 1.0, "tv_bound(%.17g) = %.17g", d, t);
        if (d < 0.0) FZ_CHECK(t != t, "tv_bound(%.17g) = %.17g, not NaN", d, t);
    }
    for (i = 0; i < n; i++) {
        a[i] = fz_value(&g, &in, i);
        b[i] = fz_value(&g, &in, i);
        if (op & 1) { /* probabilities: mostly positive */
            if (fz_u8(&in) % 16) { a[i] = fabsf(a[i]); b[i] = fabsf(b[i]); }
        }
        if (!(fabsf(a[i]) <= FLT_MAX) || !(fabsf(b[i]) <= FLT_MAX)) finite = 0;
        if (!(a[i] > 0.0f) || !(b[i] > 0.0f)) positive = 0;
    }
    sa = fz_take_snap(a, n * sizeof(float));
    sb = fz_take_snap(b, n * sizeof(float));
    st = (op & 1) ? rn_hilbert_probs(a, b, n, &out) : rn_hilbert_logits(a, b, n, &out);
    FZ_CHECK(fz_snap_same(&sa) && fz_snap_same(&sb), "inputs changed");
    if (n == 0 || !finite || ((op & 1) && !positive)) FZ_CHECK(st != RN_OK, "invalid input accepted");
    if (st != RN_OK) {
        FZ_CHECK(out == -5.0, "out written on error %d (%s)", (int)st, rn_status_string(st));
    } else {
        double mag = 0.0; /* rounding scale: the largest |log| or |logit| involved */
        for (i = 0; i < n; i++) {
            double x = (op & 1) ? log((double)a[i]) : (double)a[i], y = (op & 1) ? log((double)b[i]) : (double)b[i];
            double d = y - x;
            if (d < lo) lo = d;
            if (d > hi) hi = d;
            if (fabs(x) > mag) mag = fabs(x);
            if (fabs(y) > mag) mag = fabs(y);
        }
        FZ_CHECK(out >= 0.0 && fabs(out - (hi - lo)) <= 1e-13 * mag + 1e-12 * (hi - lo) + 1e-300,
                 "distance %.17g, reference %.17g", out, hi - lo);
    }
    fz_snap_free(&sa);
    fz_snap_free(&sb);
    free(a);
    free(b);
    return 0;
}
