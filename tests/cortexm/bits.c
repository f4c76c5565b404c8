/* bits.c - a digest of the bits of rownorm.h's and muon.h's results on fixed inputs, to compare
 * a target's build with the host's (docs/embedding.md, "Bit-identical results on a Cortex-M"):
 * a RowNorm step (3 steps, 24 x 40), the exact row diameter and the Hilbert RMS (24 x 40, 8 tokens), a Muon step
 * (3 steps, 16 x 40, default config), a Muown step and an AdamW step. Prints FNV-1a hashes:
 * for the RowNorm step, one for the diameter and RMS (of inputs of their own), one for muon.h, each over
 * every output's bytes. Scalar builds (-DRN_NO_SIMD -DMUON_NO_SIMD on the host). */
#define ROWNORM_IMPLEMENTATION
#include "rownorm.h"
#define MUON_IMPLEMENTATION
#include "muon.h"
#include <stdio.h>
#include <stdint.h>
#include <string.h>

static uint64_t h_rn = 1469598103934665603ull, h_geo = 1469598103934665603ull, h_mu = 1469598103934665603ull;
static void mix(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) { *h ^= b[i]; *h *= 1099511628211ull; }
}
static uint32_t lcg = 12345u;
static float rnd(void) /* exactly representable values in [-1, 1) */
{
    lcg = lcg * 1664525u + 1013904223u;
    return (float)((int32_t)(lcg >> 8) - (1 << 23)) / (float)(1 << 23);
}
static void fill(float *a, size_t n, float s)
{
    size_t i;
    for (i = 0; i < n; i++) a[i] = s * rnd();
}

#define R 24
#define C 40
#define MR 16
static float W[R * C], G[R * C], S[R * C], H[8 * C];

int main(void)
{
    int k, bad = 0;
    {
        rn_rownorm_state st;
        rn_rownorm_config cfg = rn_rownorm_default();
        double d = 0.0, rms = 0.0;
        size_t i = 0, j = 0;
        fill(W, R * C, 0.1f);
        bad |= rn_rownorm_init(&st, R, C) != RN_OK;
        for (k = 0; k < 3 && !bad; k++) {
            fill(G, R * C, 1.0f);
            bad |= rn_rownorm_step(&st, &cfg, W, C, G, C, S, C) != RN_OK;
            mix(&h_rn, W, sizeof W);
            mix(&h_rn, S, sizeof S);
        }
        rn_rownorm_free(&st);
        fill(S, R * C, 0.01f); /* the geometry on inputs of its own, not on the step's S */
        bad |= rn_row_diameter(S, R, C, C, &d, &i, &j) != RN_OK;
        mix(&h_geo, &d, sizeof d);
        fill(H, 8 * C, 1.0f);
        bad |= rn_hilbert_rms(S, R, C, C, H, 8, C, &rms) != RN_OK;
        mix(&h_geo, &rms, sizeof rms);
    }
    {
        muon_state st;
        muown_state ow;
        muon_adamw_state as;
        muon_config cfg = muon_default();
        muown_config oc = muown_default();
        muon_adamw_config ac = muon_adamw_default();
        fill(W, MR * C, 0.1f);
        bad |= muon_init(&st, MR, C) != MUON_OK;
        for (k = 0; k < 3 && !bad; k++) {
            fill(G, MR * C, 1.0f);
            bad |= muon_step(&st, &cfg, W, C, G, C, S, C) != MUON_OK;
            mix(&h_mu, W, MR * C * sizeof(float));
            mix(&h_mu, S, MR * C * sizeof(float));
        }
        muon_free(&st);
        bad |= muown_init(&ow, W, MR, C, C) != MUON_OK;
        fill(G, MR * C, 1.0f);
        bad |= muown_step(&ow, &oc, W, C, G, C, S, C) != MUON_OK;
        mix(&h_mu, W, MR * C * sizeof(float));
        muown_free(&ow);
        bad |= muon_adamw_init(&as, MR * C) != MUON_OK;
        bad |= muon_adamw_step(&as, &ac, W, G, S) != MUON_OK;
        mix(&h_mu, W, MR * C * sizeof(float));
        mix(&h_mu, S, MR * C * sizeof(float));
        muon_adamw_free(&as);
    }
    /* 32-bit halves: newlib-nano's printf has no %llx */
    printf("bits: rownorm step %08lx%08lx diameter+rms %08lx%08lx muon %08lx%08lx%s\n", (unsigned long)(h_rn >> 32),
           (unsigned long)(h_rn & 0xffffffffu), (unsigned long)(h_geo >> 32), (unsigned long)(h_geo & 0xffffffffu),
           (unsigned long)(h_mu >> 32), (unsigned long)(h_mu & 0xffffffffu), bad ? " FAILED" : "");
    return bad;
}
