/* test_plot.c - SVG line plots: well-formed output, series names and legend, NaN gaps, log
 * scale, escaping, nice tick labels, file writing. */
#include "tests/test.h"
#include "plot.h"

#include <ctype.h>

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0, k = strlen(needle);
    const char *p = hay;
    while ((p = strstr(p, needle)) != NULL) n++, p += k;
    return n;
}

static int has_ci(const char *hay, const char *needle) /* case-insensitive substring */
{
    size_t i, j, k = strlen(needle);
    for (i = 0; hay[i]; i++) {
        for (j = 0; j < k && hay[i + j] && tolower((unsigned char)hay[i + j]) == tolower((unsigned char)needle[j]); j++) {}
        if (j == k) return 1;
    }
    return 0;
}

/* Starts with <svg, ends with </svg>, balanced text/g elements, no nan/inf anywhere. */
static int well_formed(const char *s, size_t len)
{
    int ok = len > 20 && strncmp(s, "<svg ", 5) == 0 && strlen(s) == len;
    ok = ok && len >= 7 && strcmp(s + len - 7, "</svg>\n") == 0 && count(s, "<svg") == 1;
    ok = ok && count(s, "<text") == count(s, "</text>") && count(s, "<g") == count(s, "</g>");
    ok = ok && !has_ci(s, "nan") && !has_ci(s, "inf");
    if (!ok) fprintf(stderr, "  malformed SVG (%lu bytes):\n%.400s\n", (unsigned long)len, s);
    return ok;
}

static void test_two_series_with_legend(void)
{
    plot_desc d;
    plot *p;
    double x[50], a[50], r[50];
    char *svg = NULL;
    size_t len = 0, i;
    memset(&d, 0, sizeof d);
    d.title = "Validation loss";
    d.xlabel = "tokens";
    d.ylabel = "loss";
    for (i = 0; i < 50; i++) {
        x[i] = 4096.0 * (double)(i + 1) * 100;
        a[i] = 8.0 / (1.0 + 0.1 * (double)i) + 3.0;
        r[i] = 8.1 / (1.0 + 0.1 * (double)i) + 3.0;
    }
    p = plot_create(&d);
    CHECK(p != NULL);
    CHECK(plot_add_series(p, "AdamW head", x, a, 50) == GPT_OK);
    CHECK(plot_add_series(p, "RowNorm head", x, r, 50) == GPT_OK);
    CHECK(plot_render_svg(p, &svg, &len) == GPT_OK);
    CHECK(well_formed(svg, len));
    CHECK(strstr(svg, "AdamW head") && strstr(svg, "RowNorm head") && strstr(svg, "Validation loss"));
    CHECK(strstr(svg, ">tokens<") && strstr(svg, ">loss<"));
    CHECK(count(svg, "<path") == 2 && count(svg, " M") == 2);
    /* x spans 409600 .. 20480000: one suffix for the axis, nice steps */
    CHECK_MSG(strstr(svg, ">5M<") || strstr(svg, ">5.0M<"), "no 5M tick label");
    CHECK(strstr(svg, "k<") == NULL);
    free(svg);
    plot_free(p);
}

static void test_gaps_and_nonfinite(void)
{
    double nan = strtod("nan", NULL), inf = strtod("inf", NULL);
    double y[9], x[9];
    plot *p = plot_create(NULL);
    char *svg = NULL;
    size_t len = 0, i;
    for (i = 0; i < 9; i++) x[i] = (double)i, y[i] = (double)i * 0.5;
    y[3] = nan;
    y[6] = inf;
    x[8] = nan;
    CHECK(plot_add_series(p, "with gaps", x, y, 9) == GPT_OK);
    CHECK(plot_add_series(p, "all missing", NULL, y + 3, 1) == GPT_OK);
    CHECK(plot_add_series(p, "empty", NULL, NULL, 0) == GPT_OK);
    CHECK(plot_render_svg(p, &svg, &len) == GPT_OK);
    CHECK(well_formed(svg, len));
    /* pieces 0-2, 4-5 and the isolated point 7 (6 is inf, 8 has x nan) */
    CHECK(count(svg, " M") == 3 && count(svg, "<circle") == 1);
    free(svg);
    plot_free(p);
}

static void test_log_scale(void)
{
    plot_desc d;
    plot *p;
    double y[40], y2[40];
    char *svg = NULL;
    size_t len = 0, i;
    memset(&d, 0, sizeof d);
    d.title = "Step diameter D";
    d.log_y = 1;
    for (i = 0; i < 40; i++) {
        y[i] = 3e-2 * pow(0.9, (double)i);
        y2[i] = 6e-4 * pow(0.95, (double)i);
    }
    y2[5] = 0;    /* not drawable on a log axis: a gap */
    y2[6] = -1.0;
    p = plot_create(&d);
    CHECK(plot_add_series(p, "AdamW", NULL, y, 40) == GPT_OK);
    CHECK(plot_add_series(p, "RowNorm", NULL, y2, 40) == GPT_OK);
    CHECK(plot_render_svg(p, &svg, &len) == GPT_OK);
    CHECK(well_formed(svg, len));
    CHECK(strstr(svg, ">0.001<") && strstr(svg, ">0.01<") && strstr(svg, ">1e-05<")); /* decades */
    CHECK(count(svg, " M") == 3);
    free(svg);
    plot_free(p);
    /* two decades or fewer: 2 and 5 in between */
    memset(&d, 0, sizeof d);
    d.log_y = 1;
    p = plot_create(&d);
    y[0] = 0.15;
    y[1] = 3;
    CHECK(plot_add_series(p, "s", NULL, y, 2) == GPT_OK);
    CHECK(plot_render_svg(p, &svg, &len) == GPT_OK);
    CHECK(well_formed(svg, len) && strstr(svg, ">0.2<") && strstr(svg, ">5<") && strstr(svg, ">10<"));
    free(svg);
    plot_free(p);
}

static void test_escaping_and_edge_ranges(void)
{
    plot_desc d;
    plot *p;
    double one = 2.5, y[3] = {1e-7, 2e-7, 3e-7};
    char *svg = NULL;
    size_t len = 0;
    memset(&d, 0, sizeof d);
    d.title = "a<b & \"c\"";
    p = plot_create(&d);
    CHECK(plot_add_series(p, "x<y>", NULL, &one, 1) == GPT_OK); /* a single point */
    CHECK(plot_add_series(p, "tiny", NULL, y, 3) == GPT_OK);
    CHECK(plot_render_svg(p, &svg, &len) == GPT_OK);
    CHECK(well_formed(svg, len));
    CHECK(strstr(svg, "a&lt;b &amp; &quot;c&quot;") && strstr(svg, "x&lt;y&gt;") && !strstr(svg, "a<b"));
    free(svg);
    plot_free(p);
    p = plot_create(NULL); /* nothing to draw: still a valid, empty frame */
    CHECK(plot_render_svg(p, &svg, &len) == GPT_OK && well_formed(svg, len));
    free(svg);
    plot_free(p);
}

/* Styles (colour, dashes, markers, labels, a ring), a log x axis, a caption, the x range ending
 * at the data. */
static void test_styles_log_x_caption(void)
{
    const double x[3] = {1e-3, 4e-3, 2e-2}, y[3] = {3.5, 3.1, 3.3};
    const double tx[3] = {0, 1000, 2050}, ty[3] = {5, 4, 3};
    const char *labels[3] = {"0.001", NULL, "0.02"};
    plot_desc d;
    plot_style st;
    plot *p;
    char *svg = NULL;
    size_t len = 0;
    memset(&d, 0, sizeof d);
    d.log_x = 1;
    d.caption = "line one\nline two";
    p = plot_create(&d);
    memset(&st, 0, sizeof st);
    st.color = "#d62728", st.markers = 1, st.labels = labels, st.ring = 1;
    CHECK(plot_add_series_style(p, "RowNorm", x, y, 3, &st) == GPT_OK);
    st.color = "red\"/><script>";
    CHECK(plot_add_series_style(p, "bad colour", x, y, 3, &st) == GPT_ERR_DOMAIN);
    st.color = "#1f77b4", st.dashed = 1, st.labels = NULL, st.ring = 7; /* a ring past the end: none */
    CHECK(plot_add_series_style(p, "AdamW", x, y, 3, &st) == GPT_OK);
    CHECK(plot_render_svg(p, &svg, &len) == GPT_OK && well_formed(svg, len));
    if (svg) {
        CHECK(count(svg, "stroke=\"#d62728\"") >= 2 && count(svg, "stroke-dasharray") == 2); /* path + legend */
        CHECK(count(svg, "r=\"8\"") == 1 && count(svg, "r=\"3.5\"") == 6);
        CHECK(strstr(svg, ">0.001<") && strstr(svg, ">0.02<") && strstr(svg, ">line one<") && strstr(svg, ">line two<"));
        CHECK(strstr(svg, ">0.002<") && strstr(svg, ">0.005<") && strstr(svg, ">0.01<")); /* log ticks 1-2-5 */
        CHECK(strstr(svg, "height=\"482\"") != NULL); /* 450 + two caption lines */
    }
    free(svg);
    plot_free(p);
    /* a linear x axis ends at the data: no tick beyond 2050 (a widened axis would reach 2500) */
    p = plot_create(NULL);
    CHECK(plot_add_series(p, "s", tx, ty, 3) == GPT_OK);
    CHECK(plot_render_svg(p, &svg, &len) == GPT_OK && well_formed(svg, len));
    if (svg) CHECK(strstr(svg, ">2000<") && !strstr(svg, ">2500<") && strstr(svg, ">0<"));
    free(svg);
    plot_free(p);
}

/* Parses the SVG's circles (dots and rings) and labels into boxes: what a label must not cover. */
static size_t svg_boxes(const char *svg, double (*box)[4], int *is_label, size_t cap)
{
    size_t n = 0;
    const char *p = svg;
    while (n < cap && (p = strstr(p, "<")) != NULL) {
        double x, y, r;
        if (sscanf(p, "<circle cx=\"%lf\" cy=\"%lf\" r=\"%lf\"", &x, &y, &r) == 3 ||
            sscanf(p, "<circle class=\"ring\" cx=\"%lf\" cy=\"%lf\" r=\"%lf\"", &x, &y, &r) == 3) {
            box[n][0] = x - r, box[n][1] = y - r, box[n][2] = x + r, box[n][3] = y + r, is_label[n++] = 0;
        } else if (sscanf(p, "<text class=\"label\" x=\"%lf\" y=\"%lf\"", &x, &y) == 2) {
            const char *gt = strchr(p, '>'), *end = gt ? strstr(gt, "</text>") : NULL;
            double w = end ? 6.0 * (double)(end - gt - 1) : 0;
            double x0 = strstr(p, "text-anchor=\"end\"") && strstr(p, "text-anchor=\"end\"") < gt ? x - w
                        : strstr(p, "text-anchor=\"middle\"") && strstr(p, "text-anchor=\"middle\"") < gt ? x - w / 2 : x;
            box[n][0] = x0, box[n][1] = y - 8, box[n][2] = x0 + w, box[n][3] = y + 3, is_label[n++] = 1;
        }
        p++;
    }
    return n;
}

/* Labels sit beside their points without covering a dot, a ring or another label (a ring of the
 * other series right where the first place would be); spreads draw as error bars (with dots) or
 * a band (without), and the y axis takes them in. */
static void test_labels_avoid_marks_and_spreads(void)
{
    const double xa[3] = {1e-3, 1e-2, 1e-1}, ya[3] = {3.0, 2.0, 3.0};
    const double xb[3] = {1.2e-3, 1.12e-2, 1.2e-1}, yb[3] = {3.05, 2.06, 3.05};
    const double lo[3] = {2.9, 1.5, 2.9}, hi[3] = {3.1, 2.1, 3.1};
    const char *la[3] = {"0.001", "0.01", "0.1"}, *lb[3] = {"0.0012", "0.0112", "0.12"};
    double box[64][4];
    int is_label[64], overlaps = 0, labels = 0;
    size_t n, i, k, len = 0;
    plot_desc d;
    plot_style st;
    plot *p;
    char *svg = NULL;
    memset(&d, 0, sizeof d);
    d.log_x = 1;
    p = plot_create(&d);
    memset(&st, 0, sizeof st);
    st.color = "#1f77b4", st.markers = 1, st.labels = la, st.ring = -1, st.ylo = lo, st.yhi = hi;
    CHECK(plot_add_series_style(p, "AdamW", xa, ya, 3, &st) == GPT_OK);
    st.color = "#d62728", st.labels = lb, st.ring = 1, st.ylo = st.yhi = NULL;
    CHECK(plot_add_series_style(p, "RowNorm", xb, yb, 3, &st) == GPT_OK);
    st.markers = 0, st.labels = NULL, st.ring = -1, st.ylo = lo, st.yhi = hi, st.color = "#2ca02c";
    CHECK(plot_add_series_style(p, "band", xa, ya, 3, &st) == GPT_OK);
    CHECK(plot_render_svg(p, &svg, &len) == GPT_OK && well_formed(svg, len));
    if (svg) {
        n = svg_boxes(svg, box, is_label, 64);
        for (i = 0; i < n; i++) {
            labels += is_label[i];
            for (k = 0; k < n; k++)
                if (is_label[i] && k != i && box[i][0] < box[k][2] && box[k][0] < box[i][2] && box[i][1] < box[k][3] &&
                    box[k][1] < box[i][3])
                    overlaps++;
        }
        CHECK_MSG(labels == 6 && overlaps == 0, "%d labels, %d overlaps", labels, overlaps);
        CHECK(count(svg, "class=\"bar\"") == 3 && count(svg, "fill-opacity=\"0.15\"") == 1);
        CHECK(strstr(svg, ">1.5<") != NULL); /* the y axis reaches the lowest spread (1.5) */
    }
    free(svg);
    plot_free(p);
}

static void test_write_file_and_errors(void)
{
    const char *path = "test_plot_tmp.svg";
    double y[3] = {1, 2, 3};
    plot *p = plot_create(NULL);
    char err[256], *svg = NULL, buf[8192];
    size_t len = 0, got;
    FILE *f;
    int i;
    CHECK(plot_add_series(p, "s", NULL, y, 3) == GPT_OK);
    CHECK(plot_write_svg(p, path, err, sizeof err) == GPT_OK);
    CHECK(plot_render_svg(p, &svg, &len) == GPT_OK);
    f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f) {
        got = fread(buf, 1, sizeof buf, f);
        fclose(f);
        CHECK(got == len && memcmp(buf, svg, len) == 0);
    }
    remove(path);
    CHECK(plot_write_svg(p, "no_such_dir_for_plot/x.svg", err, sizeof err) == GPT_ERR_IO &&
          strstr(err, "no_such_dir_for_plot"));
    for (i = 1; i < PLOT_MAX_SERIES; i++) CHECK(plot_add_series(p, "more", NULL, y, 3) == GPT_OK);
    CHECK(plot_add_series(p, "one too many", NULL, y, 3) == GPT_ERR_DOMAIN);
    CHECK(plot_add_series(NULL, "x", NULL, y, 3) == GPT_ERR_NULL);
    CHECK(plot_add_series(p, "x", NULL, NULL, 3) == GPT_ERR_NULL);
    free(svg);
    plot_free(p);
}

int main(void)
{
    (void)t_rng_normal; /* harness helpers this file does not need */
    (void)t__near;
    RUN(test_two_series_with_legend);
    RUN(test_gaps_and_nonfinite);
    RUN(test_log_scale);
    RUN(test_escaping_and_edge_ranges);
    RUN(test_styles_log_x_caption);
    RUN(test_labels_avoid_marks_and_spreads);
    RUN(test_write_file_and_errors);
    return TEST_REPORT();
}
