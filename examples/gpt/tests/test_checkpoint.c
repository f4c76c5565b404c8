/* test_checkpoint.c - the checkpoint container: round trip, and every damaged file gives its own
 * clear error (truncated, wrong magic, wrong version, checksum, malformed, missing, mismatched). */
#define _POSIX_C_SOURCE 200809L
#include "checkpoint.h"
#include "data.h"
#include "tests/test.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned char *image_of_sample(size_t *len)
{
    ckpt_writer w;
    unsigned char *img = NULL;
    uint64_t u[3] = {1, 2, 0xFFFFFFFFFFFFFFFFULL};
    double d[2] = {3.25, -1e-300};
    float f[4] = {1.5f, -0.0f, 1e-40f, 0.0f};
    f[3] = (float)NAN;
    ckpt_writer_init(&w);
    ckpt_put_u64(&w, "a.u", u, 3);
    ckpt_put_f64(&w, "b.d", d, 2);
    ckpt_put_f32(&w, "c.f", f, 4);
    ckpt_put_u64(&w, "empty", NULL, 0);
    ckpt_finish(&w, &img, len);
    return img;
}

static void test_round_trip(void)
{
    size_t len;
    unsigned char *img = image_of_sample(&len);
    ckpt_reader r;
    uint64_t u[3];
    double d[2];
    float f[4];
    uint32_t bits;
    CHECK(img != NULL);
    CHECK(ckpt_parse(&r, img, len, "mem", NULL, 0) == GPT_OK);
    CHECK(r.n_fields == 4);
    CHECK(ckpt_get_u64(&r, "a.u", u, 3, NULL, 0) == GPT_OK);
    CHECK(u[0] == 1 && u[1] == 2 && u[2] == 0xFFFFFFFFFFFFFFFFULL);
    CHECK(ckpt_get_f64(&r, "b.d", d, 2, NULL, 0) == GPT_OK);
    CHECK(d[0] == 3.25 && d[1] == -1e-300);
    CHECK(ckpt_get_f32(&r, "c.f", f, 4, NULL, 0) == GPT_OK);
    memcpy(&bits, &f[1], 4);
    CHECK(f[0] == 1.5f && bits == 0x80000000u && f[2] == 1e-40f && f[3] != f[3]);
    CHECK(ckpt_get_u64(&r, "empty", NULL, 0, NULL, 0) == GPT_OK);
    CHECK(ckpt_has(&r, "a.u") && !ckpt_has(&r, "a"));
    ckpt_reader_free(&r);
    free(img);
}

/* A large random f32 field survives bit for bit. */
static void test_large_random_field(void)
{
    enum { N = 10000 };
    static float a[N], b[N];
    t_rng rng = {42};
    ckpt_writer w;
    ckpt_reader r;
    unsigned char *img;
    size_t len, i;
    for (i = 0; i < N; i++) a[i] = (float)t_rng_normal(&rng);
    ckpt_writer_init(&w);
    ckpt_put_f32(&w, "param.lm_head", a, N);
    CHECK(ckpt_finish(&w, &img, &len) == GPT_OK);
    CHECK(ckpt_parse(&r, img, len, "mem", NULL, 0) == GPT_OK);
    CHECK(ckpt_get_f32(&r, "param.lm_head", b, N, NULL, 0) == GPT_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK_NEAR(b[17], a[17], 0, 0);
    ckpt_reader_free(&r);
    free(img);
}

static void test_missing_and_mismatch(void)
{
    size_t len;
    unsigned char *img = image_of_sample(&len);
    ckpt_reader r;
    uint64_t u[3] = {7, 7, 7};
    double d[3] = {7, 7, 7};
    char err[256];
    CHECK(ckpt_parse(&r, img, len, "mem", NULL, 0) == GPT_OK);
    CHECK(ckpt_get_u64(&r, "nope", u, 1, err, sizeof err) == GPT_ERR_MISSING);
    CHECK(strstr(err, "nope") != NULL);
    CHECK(ckpt_get_f64(&r, "a.u", d, 3, err, sizeof err) == GPT_ERR_MISMATCH); /* type */
    CHECK(ckpt_get_u64(&r, "a.u", u, 2, err, sizeof err) == GPT_ERR_MISMATCH); /* count */
    CHECK(strstr(err, "a.u") != NULL && strstr(err, "3 x u64") != NULL);
    CHECK(u[0] == 7 && d[0] == 7); /* untouched */
    ckpt_reader_free(&r);
    free(img);
}

static void test_every_truncation_is_reported(void)
{
    size_t len, cut;
    unsigned char *img = image_of_sample(&len);
    int all = 1;
    char err[256];
    for (cut = 0; cut < len; cut++) {
        ckpt_reader r;
        memset(&r, 0x5a, sizeof r);
        if (ckpt_parse(&r, img, cut, "ck.bin", err, sizeof err) != GPT_ERR_TRUNCATED || !strstr(err, "truncated") ||
            !strstr(err, "ck.bin"))
            all = 0;
    }
    CHECK(all);
    free(img);
}

static void test_damaged_headers(void)
{
    size_t len;
    unsigned char *img = image_of_sample(&len), *bad = (unsigned char *)malloc(len + 1);
    ckpt_reader r;
    char err[256];
    memcpy(bad, img, len);
    bad[0] = 'X';
    CHECK(ckpt_parse(&r, bad, len, "ck.bin", err, sizeof err) == GPT_ERR_MAGIC);
    CHECK(strstr(err, "magic") != NULL);
    memcpy(bad, img, len);
    data_put_u32le(bad + 4, 2);
    CHECK(ckpt_parse(&r, bad, len, "ck.bin", err, sizeof err) == GPT_ERR_VERSION);
    CHECK(strstr(err, "version 2") != NULL);
    memcpy(bad, img, len);
    bad[len / 2] ^= 1;
    CHECK(ckpt_parse(&r, bad, len, "ck.bin", err, sizeof err) == GPT_ERR_CHECKSUM);
    CHECK(strstr(err, "checksum") != NULL);
    memcpy(bad, img, len);
    bad[len] = 0;
    CHECK(ckpt_parse(&r, bad, len + 1, "ck.bin", err, sizeof err) == GPT_ERR_CORRUPT);
    /* a field count that lies, with a valid checksum: malformed */
    memcpy(bad, img, len);
    data_put_u32le(bad + 16, 5);
    data_put_u64le(bad + len - 8, data_fnv1a64(bad, len - 8, DATA_FNV64_INIT));
    CHECK(ckpt_parse(&r, bad, len, "ck.bin", err, sizeof err) == GPT_ERR_CORRUPT);
    CHECK(strstr(err, "malformed") != NULL);
    free(bad);
    free(img);
}

static void test_file_round_trip_and_io_error(void)
{
    char dir[] = "/tmp/test_ckpt_XXXXXX", path[128];
    ckpt_writer w;
    ckpt_reader r;
    double d = 0;
    char err[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/c.bin", dir);
    ckpt_writer_init(&w);
    ckpt_put_f64_1(&w, "x", 2.5);
    CHECK(ckpt_write_file(&w, path, err, sizeof err) == GPT_OK);
    ckpt_writer_free(&w);
    CHECK(ckpt_read_file(&r, path, err, sizeof err) == GPT_OK);
    CHECK(ckpt_get_f64(&r, "x", &d, 1, NULL, 0) == GPT_OK && d == 2.5);
    ckpt_reader_free(&r);
    remove(path);
    CHECK(ckpt_read_file(&r, path, err, sizeof err) == GPT_ERR_IO);
    CHECK(strstr(err, "c.bin") != NULL);
    rmdir(dir);
}

/* Data-parallel pieces: fields serialised by another writer and appended raw give the image a
 * single writer gives, byte for byte; a range of an f32 field reads those values only. */
static void test_raw_append_and_range(void)
{
    ckpt_writer a, b, one;
    unsigned char *ia = NULL, *io = NULL;
    const unsigned char *body;
    size_t la = 0, lo = 0, n;
    float f[6] = {1, 2, 3, 4, 5, 6}, got[3] = {0, 0, 0};
    ckpt_reader r;
    ckpt_writer_init(&a), ckpt_writer_init(&b), ckpt_writer_init(&one);
    ckpt_put_u64_1(&a, "x", 7);
    ckpt_put_f32(&b, "y", f, 6), ckpt_put_f64_1(&b, "z", 0.5);
    n = ckpt_writer_body(&b, &body);
    CHECK(n > 0 && b.n_fields == 2);
    ckpt_put_raw(&a, body, n, b.n_fields);
    ckpt_put_u64_1(&one, "x", 7), ckpt_put_f32(&one, "y", f, 6), ckpt_put_f64_1(&one, "z", 0.5);
    CHECK(ckpt_finish(&a, &ia, &la) == GPT_OK && ckpt_finish(&one, &io, &lo) == GPT_OK);
    CHECK(la == lo && memcmp(ia, io, la) == 0);
    CHECK(ckpt_parse(&r, ia, la, "mem", NULL, 0) == GPT_OK);
    CHECK(ckpt_get_f32_range(&r, "y", 6, 2, 3, got, NULL, 0) == GPT_OK);
    CHECK(got[0] == 3 && got[1] == 4 && got[2] == 5);
    CHECK(ckpt_get_f32_range(&r, "y", 6, 4, 3, got, NULL, 0) == GPT_ERR_MISMATCH); /* past the end */
    CHECK(ckpt_get_f32_range(&r, "y", 5, 0, 1, got, NULL, 0) == GPT_ERR_MISMATCH); /* wrong total */
    CHECK(ckpt_get_f32_range(&r, "z", 1, 0, 1, got, NULL, 0) == GPT_ERR_MISMATCH); /* f64 field */
    CHECK(ckpt_get_f32_range(&r, "w", 1, 0, 1, got, NULL, 0) == GPT_ERR_MISSING);
    CHECK(got[0] == 3); /* untouched on error */
    ckpt_reader_free(&r);
    ckpt_writer_free(&b);
    free(ia), free(io);
}

/* ckpt_check_field: type and count as the getters, and NaN / Inf found without copying; a
 * checkpoint written to a FIFO is refused and the FIFO stays. */
static void test_check_field_and_fifo(void)
{
    size_t len;
    unsigned char *img = image_of_sample(&len);
    ckpt_reader r;
    char err[256], dir[] = "/tmp/test_ckpt_XXXXXX", fifo[128];
    ckpt_writer w;
    struct stat st;
    CHECK(ckpt_parse(&r, img, len, "mem.ck", NULL, 0) == GPT_OK);
    CHECK(ckpt_check_field(&r, "b.d", CKPT_F64, 2, 1, err, sizeof err) == GPT_OK);
    CHECK(ckpt_check_field(&r, "a.u", CKPT_U64, 3, 1, err, sizeof err) == GPT_OK);
    CHECK(ckpt_check_field(&r, "c.f", CKPT_F32, 4, 0, err, sizeof err) == GPT_OK);
    CHECK(ckpt_check_field(&r, "c.f", CKPT_F32, 4, 1, err, sizeof err) == GPT_ERR_CORRUPT);
    CHECK_MSG(strstr(err, "mem.ck") && strstr(err, "\"c.f\"") && strstr(err, "value 3"), "error: %s", err);
    CHECK(ckpt_check_field(&r, "c.f", CKPT_F32, 5, 0, err, sizeof err) == GPT_ERR_MISMATCH && strstr(err, "c.f"));
    CHECK(ckpt_check_field(&r, "c.f", CKPT_F64, 4, 0, err, sizeof err) == GPT_ERR_MISMATCH);
    CHECK(ckpt_check_field(&r, "zz", CKPT_F64, 1, 0, err, sizeof err) == GPT_ERR_MISSING && strstr(err, "zz"));
    ckpt_reader_free(&r);
    free(img);
    CHECK(mkdtemp(dir) != NULL);
    snprintf(fifo, sizeof fifo, "%s/ck.fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    ckpt_writer_init(&w);
    ckpt_put_f64_1(&w, "x", 2.5);
    CHECK(ckpt_write_file(&w, fifo, err, sizeof err) == GPT_ERR_IO);
    CHECK_MSG(strstr(err, fifo) && strstr(err, "not a regular file"), "error: %s", err);
    ckpt_writer_free(&w);
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    remove(fifo);
    rmdir(dir);
}

int main(void)
{
    RUN(test_round_trip);
    RUN(test_large_random_field);
    RUN(test_missing_and_mismatch);
    RUN(test_every_truncation_is_reported);
    RUN(test_damaged_headers);
    RUN(test_file_round_trip_and_io_error);
    RUN(test_raw_append_and_range);
    RUN(test_check_field_and_fifo);
    return TEST_REPORT();
}
