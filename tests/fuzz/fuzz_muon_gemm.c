/* fuzz_muon_gemm.c - muon_sgemm, muon_sgemm_ws, muon_ssyrk, muon_ssyrk_ws,
 * muon_gemm_workspace_size.
 * Checks: A and B never change; on an error C is untouched; invalid sizes never return OK;
 * C overlapping A or B is MUON_ERR_ALIAS; columns past n inside ldc are never written; with
 * tame values the result matches a double reference (|err| <= 1e-5 * sum |alpha a b| + |beta c|);
 * SSYRK's C is symmetric bit for bit; the _ws forms with any accepted workspace size give the
 * same bits as the allocating form. */
#include "muon.h"
#include "fuzz_common.h"

static int overlaps(const float *a, size_t an, const float *b, size_t bn)
{
    return an && bn && a < b + bn && b < a + an;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    uint8_t op = fz_u8(&in), alias = fz_u8(&in);
    int syrk = op & 1, use_ws = (op >> 1) & 1;
    muon_transpose ta = (muon_transpose)((op >> 2) & 1), tb = (muon_transpose)((op >> 3) & 1);
    fz_shape sa, sb, sc;
    size_t m, n, k;
    static const double ordinary[] = {1.0, 0.5, -1.0, 0.0, 2.0, 1e-3, -0.25};
    float alpha = (float)fz_param(&in, ordinary, 7), beta = (float)fz_param(&in, ordinary, 7);
    fz_valgen ga = fz_take_valgen(&in), gc = fz_take_valgen(&in);
    float *A, *B, *C, *buf = NULL;
    fz_snap snA, snB, snC;
    muon_status st;
    int bogus;
    size_t ws_bytes = 0;
    void *ws = NULL;

    m = 1 + fz_u8(&in) % 40;
    n = syrk ? m : 1 + fz_u8(&in) % 40;
    k = 1 + fz_u8(&in) % 40;
    /* op(A) is m x k: A is m x k (no trans) or k x m; op(B) is k x n: B is k x n or n x k */
    sa = fz_take_shape(&in, 1, 1);
    sb = fz_take_shape(&in, 1, 1);
    sc = fz_take_shape(&in, 1, 1);
    {
        /* re-dimension the shapes to the product, keeping their ld padding and bad mode */
        fz_shape *s3[3];
        size_t r3[3], c3[3];
        int i;
        s3[0] = &sa; s3[1] = &sb; s3[2] = &sc;
        r3[0] = ta ? k : m; c3[0] = ta ? m : k;
        r3[1] = tb ? n : k; c3[1] = tb ? k : n;
        r3[2] = m; c3[2] = n;
        for (i = 0; i < 3; i++) {
            size_t pad = s3[i]->bogus ? 0 : s3[i]->ld - s3[i]->cols;
            int was_bogus = s3[i]->bogus;
            s3[i]->rows = r3[i];
            s3[i]->cols = c3[i];
            s3[i]->ld = c3[i] + pad;
            s3[i]->alloc = fz_extent(r3[i], c3[i], s3[i]->ld);
            s3[i]->bogus = 0;
            if (was_bogus && c3[i] > 1) { /* ld < cols */
                s3[i]->ld = c3[i] - 1;
                s3[i]->bogus = 1;
            }
        }
        if ((alias & 7) == 1) { m = 0; sc.bogus = 1; }
        if ((alias & 7) == 2) { k = SIZE_MAX / 4 + 1; sa.bogus = 1; }
    }
    bogus = sa.bogus || (sb.bogus && !syrk) || sc.bogus;
    A = fz_matrix(&sa, &ga, &in);
    B = fz_matrix(&sb, &ga, &in);
    if ((alias >> 3) % 4 == 1 && !bogus) {
        /* C placed inside a buffer that also holds A: must be MUON_ERR_ALIAS when they overlap */
        size_t off = (alias >> 5) % (sa.alloc ? sa.alloc : 1), tot = off + sc.alloc;
        if (tot < sa.alloc) tot = sa.alloc;
        buf = fz_matrix(&sc, &gc, &in);
        free(buf);
        buf = (float *)fz_malloc(tot * sizeof(float));
        for (size_t i = 0; i < tot; i++) buf[i] = fz_value(&gc, &in, i);
        memcpy(buf, A, sa.alloc * sizeof(float));
        free(A);
        A = buf;
        C = buf + off;
    } else {
        C = fz_matrix(&sc, &gc, &in);
    }
    if (use_ws) {
        int threads = (int)(fz_u8(&in) % 5) - 1;
        ws_bytes = muon_gemm_workspace_size(threads);
        if (fz_u8(&in) % 8 == 0 && ws_bytes) ws_bytes -= 1 + fz_u8(&in) % ws_bytes; /* too small */
        ws = fz_malloc(ws_bytes);
    }
    snA = fz_take_snap(A, sa.alloc * sizeof(float));
    snB = fz_take_snap(B, sb.alloc * sizeof(float));
    snC = fz_take_snap(C, sc.alloc * sizeof(float));

    if (syrk)
        st = use_ws ? muon_ssyrk_ws(ta, m, k, alpha, A, sa.ld, beta, C, sc.ld, ws, ws_bytes)
                    : muon_ssyrk(ta, m, k, alpha, A, sa.ld, beta, C, sc.ld);
    else
        st = use_ws ? muon_sgemm_ws(ta, tb, m, n, k, alpha, A, sa.ld, B, sb.ld, beta, C, sc.ld, ws, ws_bytes)
                    : muon_sgemm(ta, tb, m, n, k, alpha, A, sa.ld, B, sb.ld, beta, C, sc.ld);

    if (bogus) FZ_CHECK(st != MUON_OK, "invalid sizes accepted (m %zu n %zu k %zu)", m, n, k);
    if (buf && overlaps(A, sa.alloc, C, sc.alloc))
        FZ_CHECK(st == MUON_ERR_ALIAS || bogus, "C overlaps A: status %d", (int)st);
    if (st != MUON_OK) {
        FZ_CHECK(fz_snap_same(&snC), "C changed on error %d", (int)st);
        FZ_CHECK(fz_snap_same(&snA), "A changed on error %d", (int)st);
    } else {
        size_t i, j, p;
        const float *Bm = syrk ? A : B;
        size_t ldb = syrk ? sa.ld : sb.ld;
        muon_transpose tbb = syrk ? (ta ? MUON_NO_TRANS : MUON_TRANS) : tb;
        FZ_CHECK(fz_snap_same(&snA) && fz_snap_same(&snB), "A or B changed");
        for (i = 0; i < m; i++)
            for (j = n; j < sc.ld && i * sc.ld + j < sc.alloc; j++)
                FZ_CHECK(memcmp(C + i * sc.ld + j, (const float *)snC.copy + i * sc.ld + j, sizeof(float)) == 0,
                         "padding of C written at (%zu, %zu)", i, j);
        if (fz_valgen_tame(&ga) && fz_valgen_tame(&gc) && fabsf(alpha) <= 4.0f && fabsf(beta) <= 4.0f)
            for (i = 0; i < m; i++)
                for (j = 0; j < n; j++) {
                    /* SSYRK reads only the lower triangle of C (mirrors it; see docs/reliability.md) */
                    size_t ci = syrk && j > i ? j : i, cj = syrk && j > i ? i : j;
                    double ref = 0.0, mag = 0.0, c0 = ((const float *)snC.copy)[ci * sc.ld + cj];
                    for (p = 0; p < k; p++) {
                        double a = ta ? A[p * sa.ld + i] : A[i * sa.ld + p];
                        double b = tbb ? Bm[j * ldb + p] : Bm[p * ldb + j];
                        ref += a * b;
                        mag += fabs(a * b);
                    }
                    ref *= alpha;
                    mag *= fabs(alpha);
                    if (beta != 0.0f) {
                        ref += beta * c0;
                        mag += fabs(beta * c0);
                    }
                    FZ_CHECK(fabs(C[i * sc.ld + j] - ref) <= 1e-5 * mag + 1e-37, "C(%zu,%zu) = %.9g, ref %.9g",
                             i, j, (double)C[i * sc.ld + j], ref);
                }
        if (syrk)
            for (i = 0; i < m; i++)
                for (j = 0; j < i; j++)
                    FZ_CHECK(memcmp(C + i * sc.ld + j, C + j * sc.ld + i, sizeof(float)) == 0,
                             "SSYRK result not symmetric at (%zu, %zu)", i, j);
        if (use_ws) {
            /* same bits as the allocating form */
            float *C2 = (float *)fz_malloc(sc.alloc * sizeof(float));
            muon_status st2;
            memcpy(C2, snC.copy, sc.alloc * sizeof(float));
            st2 = syrk ? muon_ssyrk(ta, m, k, alpha, A, sa.ld, beta, C2, sc.ld)
                       : muon_sgemm(ta, tb, m, n, k, alpha, A, sa.ld, B, sb.ld, beta, C2, sc.ld);
            FZ_CHECK(st2 == MUON_OK, "allocating form failed: %d", (int)st2);
            for (i = 0; i < m; i++)
                FZ_CHECK(memcmp(C2 + i * sc.ld, C + i * sc.ld, n * sizeof(float)) == 0,
                         "workspace size changed the bits in row %zu", i);
            free(C2);
        }
    }
    fz_snap_free(&snA);
    fz_snap_free(&snB);
    fz_snap_free(&snC);
    free(ws);
    if (!buf) free(C);
    free(A);
    free(B);
    return 0;
}
