/* muon_mlp.c - train a small MLP with Muon (hidden matrices) + AdamW (head, biases) on
 * synthetic data, using only muon.h. Prints a falling loss.
 *
 * Build and run from the repository root (one command, nothing else needed):
 *     cc -O2 -std=c99 -I. examples/muon_mlp.c -o muon_mlp -lm && ./muon_mlp
 * (add -mavx2 -mfma or -march=native for the SIMD GEMM, -fopenmp for threads.)
 *
 * Task: 4-class classification of x ~ N(0, I_32) labelled by a fixed random "teacher" network
 * (argmax of a random tanh MLP), so that a student MLP can fit it but not trivially.
 * Student: 32 -> 128 -> 128 -> 4, ReLU, softmax cross-entropy, batch 128.
 * Optimisers (the usual split): Muon on the two hidden weight matrices W1 (128 x 32) and
 * W2 (128 x 128); AdamW on the head W3 (4 x 128) and every bias. Gradients are clipped by their
 * global norm (1.0) over all tensors *before* the optimisers, never after orthogonalisation.
 * Learning rates: linear warm-up over 10% of the steps, then cosine down to 10% of the peak.
 * Weights are stored as in PyTorch's nn.Linear: W is out x in and y = x W^T + b.
 */
#define MUON_IMPLEMENTATION
#include "muon.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { D_IN = 32, D_H = 128, N_CLS = 4, BATCH = 128, STEPS = 600, N_TEST = 2048 };

typedef struct { unsigned long long s; } rng;
static double rng_uniform(rng *r) /* (0, 1), splitmix64 */
{
    unsigned long long z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static float rng_normal(rng *r)
{
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
static void fill_normal(rng *r, float *a, size_t n, float std)
{
    size_t i;
    for (i = 0; i < n; i++) a[i] = std * rng_normal(r);
}

/* ---- the teacher that labels the data ---- */
typedef struct { float A[64 * D_IN], B[N_CLS * 64]; } teacher;

static int teacher_label(const teacher *t, const float *x)
{
    float h[64], best = -1e30f;
    int i, j, c = 0;
    for (i = 0; i < 64; i++) {
        float acc = 0.0f;
        for (j = 0; j < D_IN; j++) acc += t->A[i * D_IN + j] * x[j];
        h[i] = tanhf(acc);
    }
    for (i = 0; i < N_CLS; i++) {
        float acc = 0.0f;
        for (j = 0; j < 64; j++) acc += t->B[i * 64 + j] * h[j];
        if (acc > best) best = acc, c = i;
    }
    return c;
}

static void make_batch(rng *r, const teacher *t, float *X, int *y, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        fill_normal(r, X + (size_t)i * D_IN, D_IN, 1.0f);
        y[i] = teacher_label(t, X + (size_t)i * D_IN);
    }
}

/* ---- the student ---- */
typedef struct {
    float W1[D_H * D_IN], b1[D_H], W2[D_H * D_H], b2[D_H], W3[N_CLS * D_H], b3[N_CLS];
} mlp;

typedef struct { /* activations of one batch */
    float H1[BATCH * D_H], H2[BATCH * D_H], P[BATCH * N_CLS];
} acts;

static void must(muon_status s, const char *what)
{
    if (s != MUON_OK) {
        fprintf(stderr, "%s: %s\n", what, muon_status_string(s));
        exit(1);
    }
}

/* Y (n x out) = act(X (n x in) W^T + b) */
static void linear(const float *X, int n, int in, const float *W, const float *b, int out, float *Y, int relu)
{
    int i, j;
    must(muon_sgemm(MUON_NO_TRANS, MUON_TRANS, (size_t)n, (size_t)out, (size_t)in, 1.0f, X, (size_t)in, W,
                    (size_t)in, 0.0f, Y, (size_t)out),
         "sgemm");
    for (i = 0; i < n; i++)
        for (j = 0; j < out; j++) {
            float v = Y[i * out + j] + b[j];
            Y[i * out + j] = relu && v < 0.0f ? 0.0f : v;
        }
}

/* forward: returns the mean cross-entropy; P holds the softmax; *correct counts argmax hits */
static double forward(const mlp *m, const float *X, const int *y, int n, acts *a, int *correct)
{
    double loss = 0.0;
    int i, j;
    linear(X, n, D_IN, m->W1, m->b1, D_H, a->H1, 1);
    linear(a->H1, n, D_H, m->W2, m->b2, D_H, a->H2, 1);
    linear(a->H2, n, D_H, m->W3, m->b3, N_CLS, a->P, 0);
    if (correct) *correct = 0;
    for (i = 0; i < n; i++) {
        float *z = a->P + i * N_CLS, mx = z[0], s = 0.0f;
        int arg = 0;
        for (j = 1; j < N_CLS; j++)
            if (z[j] > mx) mx = z[j], arg = j;
        for (j = 0; j < N_CLS; j++) s += (z[j] = expf(z[j] - mx));
        for (j = 0; j < N_CLS; j++) z[j] /= s;
        loss -= log((double)z[y[i]] + 1e-30);
        if (correct && arg == y[i]) (*correct)++;
    }
    return loss / n;
}

/* dW (out x in) = dY^T X; db = column sums of dY */
static void linear_grads(const float *dY, const float *X, int n, int in, int out, float *dW, float *db)
{
    int i, j;
    must(muon_sgemm(MUON_TRANS, MUON_NO_TRANS, (size_t)out, (size_t)in, (size_t)n, 1.0f, dY, (size_t)out, X,
                    (size_t)in, 0.0f, dW, (size_t)in),
         "sgemm");
    for (j = 0; j < out; j++) db[j] = 0.0f;
    for (i = 0; i < n; i++)
        for (j = 0; j < out; j++) db[j] += dY[i * out + j];
}

/* dX (n x in) = dY W, then times the ReLU mask of the layer input H (H > 0) */
static void backprop_input(const float *dY, const float *W, int n, int in, int out, const float *H, float *dX)
{
    size_t i;
    must(muon_sgemm(MUON_NO_TRANS, MUON_NO_TRANS, (size_t)n, (size_t)in, (size_t)out, 1.0f, dY, (size_t)out, W,
                    (size_t)in, 0.0f, dX, (size_t)in),
         "sgemm");
    for (i = 0; i < (size_t)n * (size_t)in; i++)
        if (H[i] <= 0.0f) dX[i] = 0.0f;
}

static void backward(const mlp *m, const float *X, const int *y, int n, const acts *a, mlp *g)
{
    static float dZ[BATCH * N_CLS], dH2[BATCH * D_H], dH1[BATCH * D_H];
    int i, j;
    for (i = 0; i < n; i++)
        for (j = 0; j < N_CLS; j++)
            dZ[i * N_CLS + j] = (a->P[i * N_CLS + j] - (j == y[i] ? 1.0f : 0.0f)) / (float)n;
    linear_grads(dZ, a->H2, n, D_H, N_CLS, g->W3, g->b3);
    backprop_input(dZ, m->W3, n, D_H, N_CLS, a->H2, dH2);
    linear_grads(dH2, a->H1, n, D_H, D_H, g->W2, g->b2);
    backprop_input(dH2, m->W2, n, D_H, D_H, a->H1, dH1);
    linear_grads(dH1, X, n, D_IN, D_H, g->W1, g->b1);
}

int main(void)
{
    static teacher tch;
    static mlp model, grad;
    static acts act;
    static float X[BATCH * D_IN], Xt[N_TEST * D_IN];
    static int y[BATCH], yt[N_TEST];
    rng r = {2026};
    muon_state s1, s2;
    muon_adamw_state a3, ab1, ab2, ab3;
    muon_config mc = muon_default();        /* lr 0.02, Nesterov, EMA 0.95, Jordan x 5 */
    muon_adamw_config ac = muon_adamw_default();
    float *grads[6];
    size_t sizes[6];
    double ema = -1.0;
    int step;

    /* data and initialisation */
    fill_normal(&r, tch.A, sizeof tch.A / sizeof(float), 1.0f / sqrtf((float)D_IN) * 2.0f);
    fill_normal(&r, tch.B, sizeof tch.B / sizeof(float), 1.0f);
    make_batch(&r, &tch, Xt, yt, N_TEST); /* a fixed held-out set */
    fill_normal(&r, model.W1, sizeof model.W1 / sizeof(float), 1.0f / sqrtf((float)D_IN));
    fill_normal(&r, model.W2, sizeof model.W2 / sizeof(float), 1.0f / sqrtf((float)D_H));
    fill_normal(&r, model.W3, sizeof model.W3 / sizeof(float), 0.0f); /* zero head: Muon-safe */

    mc.weight_decay = 0.01;
    ac.lr = 3e-3;
    ac.weight_decay = 0.0;
    must(muon_init(&s1, D_H, D_IN), "muon_init W1");
    must(muon_init(&s2, D_H, D_H), "muon_init W2");
    must(muon_adamw_init(&a3, N_CLS * D_H), "adamw W3");
    must(muon_adamw_init(&ab1, D_H), "adamw b1");
    must(muon_adamw_init(&ab2, D_H), "adamw b2");
    must(muon_adamw_init(&ab3, N_CLS), "adamw b3");
    grads[0] = grad.W1, sizes[0] = D_H * D_IN;
    grads[1] = grad.b1, sizes[1] = D_H;
    grads[2] = grad.W2, sizes[2] = D_H * D_H;
    grads[3] = grad.b2, sizes[3] = D_H;
    grads[4] = grad.W3, sizes[4] = N_CLS * D_H;
    grads[5] = grad.b3, sizes[5] = N_CLS;

    printf("step   train-loss(ema)  test-loss  test-acc  grad-norm\n");
    for (step = 0; step <= STEPS; step++) {
        double loss, gnorm = 0.0;
        /* linear warm-up over 10% of the steps, then cosine to 10% of the peak */
        double f = step < STEPS / 10 ? (step + 1.0) / (STEPS / 10)
                                     : 0.1 + 0.45 * (1.0 + cos(3.141592653589793 * (step - STEPS / 10) / (STEPS - STEPS / 10)));
        mc.lr = 0.02 * f;
        ac.lr = 3e-3 * f;
        make_batch(&r, &tch, X, y, BATCH);
        loss = forward(&model, X, y, BATCH, &act, NULL);
        ema = ema < 0.0 ? loss : 0.95 * ema + 0.05 * loss;
        backward(&model, X, y, BATCH, &act, &grad);
        must(muon_clip_grad_norm(grads, sizes, 6, 1.0, &gnorm), "clip");
        must(muon_step(&s1, &mc, model.W1, D_IN, grad.W1, D_IN, NULL, 0), "muon W1");
        must(muon_step(&s2, &mc, model.W2, D_H, grad.W2, D_H, NULL, 0), "muon W2");
        must(muon_adamw_step(&a3, &ac, model.W3, grad.W3, NULL), "adamw W3");
        must(muon_adamw_step(&ab1, &ac, model.b1, grad.b1, NULL), "adamw b1");
        must(muon_adamw_step(&ab2, &ac, model.b2, grad.b2, NULL), "adamw b2");
        must(muon_adamw_step(&ab3, &ac, model.b3, grad.b3, NULL), "adamw b3");
        if (step % 50 == 0) {
            double tl = 0.0;
            int i, correct = 0, c;
            for (i = 0; i < N_TEST; i += BATCH) {
                tl += forward(&model, Xt + (size_t)i * D_IN, yt + i, BATCH, &act, &c) * BATCH;
                correct += c;
            }
            printf("%4d   %15.4f  %9.4f  %7.2f%%  %9.3f\n", step, ema, tl / N_TEST, 100.0 * correct / N_TEST, gnorm);
        }
    }
    muon_free(&s1);
    muon_free(&s2);
    muon_adamw_free(&a3);
    muon_adamw_free(&ab1);
    muon_adamw_free(&ab2);
    muon_adamw_free(&ab3);
    return 0;
}
