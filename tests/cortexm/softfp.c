/* softfp.c - how many software-double calls one RowNorm step makes per element on a
 * single-precision FPU (Cortex-M4F), with and without RN_FLOAT_ARITH (tests/rel_cortexm.sh builds
 * it both ways). Every call to the run-time library's double helpers (__aeabi_dadd, dmul, f2d,
 * d2f, the comparisons, ..., and libm's double functions through them) is counted by a linker
 * wrap (-Wl,--wrap=...) around a 64 x 32 layer's steps. The helpers use the base procedure
 * call standard (integer registers) even in a hard-float program, hence pcs("aapcs").
 * Prints "softfp: <calls per element per step> per element" and checks the step's invariant
 * D(S) <= 2 lr (so the count is of working code). */
#include "arena.h"
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#include <stdio.h>

static volatile unsigned long cm_soft; /* calls counted while cm_counting (volatile: the compiler takes
                                        * the helpers for pure functions and would drop the stores) */
static volatile int cm_counting;

#define CM_PCS __attribute__((pcs("aapcs")))
#define CM_WRAP_DD(n)                                                                   \
    extern CM_PCS double __real_##n(double, double);                                    \
    CM_PCS double __wrap_##n(double a, double b);                                       \
    CM_PCS double __wrap_##n(double a, double b) { cm_soft += cm_counting; return __real_##n(a, b); }
#define CM_WRAP_ID(n)                                                                   \
    extern CM_PCS int __real_##n(double, double);                                       \
    CM_PCS int __wrap_##n(double a, double b);                                          \
    CM_PCS int __wrap_##n(double a, double b) { cm_soft += cm_counting; return __real_##n(a, b); }
CM_WRAP_DD(__aeabi_dadd)
CM_WRAP_DD(__aeabi_dsub)
CM_WRAP_DD(__aeabi_drsub)
CM_WRAP_DD(__aeabi_dmul)
CM_WRAP_DD(__aeabi_ddiv)
CM_WRAP_ID(__aeabi_dcmpeq)
CM_WRAP_ID(__aeabi_dcmplt)
CM_WRAP_ID(__aeabi_dcmple)
CM_WRAP_ID(__aeabi_dcmpge)
CM_WRAP_ID(__aeabi_dcmpgt)
CM_WRAP_ID(__aeabi_dcmpun)
#define CM_WRAP_1(ret, n, arg)                                                          \
    extern CM_PCS ret __real_##n(arg);                                                  \
    CM_PCS ret __wrap_##n(arg a);                                                       \
    CM_PCS ret __wrap_##n(arg a) { cm_soft += cm_counting; return __real_##n(a); }
CM_WRAP_1(double, __aeabi_f2d, float)
CM_WRAP_1(float, __aeabi_d2f, double)
CM_WRAP_1(double, __aeabi_ui2d, unsigned)
CM_WRAP_1(double, __aeabi_i2d, int)

enum { V = 64, D = 32, STEPS = 3 };
static float W[V * D], G[V * D], S[V * D];

int main(void)
{
    rn_rownorm_state st;
    rn_rownorm_config cfg = rn_rownorm_default();
    unsigned s = 1u;
    size_t i, j, k;
    int t, ok = 1;
    double worst = 0.0;
    for (i = 0; i < V * D; i++) {
        s = s * 1664525u + 1013904223u;
        W[i] = (float)(s >> 9) / 4194304.0f - 1.0f;
    }
    if (rn_rownorm_init(&st, V, D) != RN_OK) return 1;
    for (t = 0; t <= STEPS; t++) { /* t = 0: not counted (the first step also forms mean(B)) */
        for (i = 0; i < V * D; i++) {
            s = s * 1664525u + 1013904223u;
            G[i] = (float)(s >> 9) / 4194304.0f - 1.0f;
        }
        cm_counting = t > 0;
        ok &= rn_rownorm_step(&st, &cfg, W, D, G, D, S, D) == RN_OK;
        cm_counting = 0;
    }
    for (i = 0; i < V; i++) /* D(S) <= 2 lr, in float (no double helpers counted here) */
        for (j = i + 1; j < V; j++) {
            float d2 = 0.0f;
            for (k = 0; k < D; k++) d2 += (S[i * D + k] - S[j * D + k]) * (S[i * D + k] - S[j * D + k]);
            if ((double)d2 > worst) worst = (double)d2;
        }
    ok &= sqrtf((float)worst) <= 2.0f * (float)cfg.lr * 1.0001f;
    rn_rownorm_free(&st);
    printf("softfp: %lu calls, %.1f per element per step%s\n", cm_soft, (double)cm_soft / (double)(V * D * STEPS),
           ok ? "" : " (FAILED: step error or D(S) > 2 lr)");
    return ok ? 0 : 1;
}
