#define _POSIX_C_SOURCE 200809L
/* histogram kernel against a plain count, and the stage's CSV, plot and {stem} handling. */
#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
/* The stage itself, built into this test without its GPU half. */
#undef IMGPIPE_HAVE_CUDA
#include "../../plugins/histogram/histogram.c"

static int ref_bin(double v, ipk_dtype t, int bins)
{
    if (t == IPK_U8) return (int)((int64_t)v * bins / 256);
    if (t == IPK_U16) return (int)((int64_t)v * bins / 65536);
    double f = floor(v * bins);
    return f < 0 ? 0 : f >= bins ? bins - 1 : (int)f;
}

static void check_counts(int w, int h, int ch, ipk_dtype t, int bins, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img src = tu_img_random(w, h, ch, t, 1 + (int)(seed % 7), &rng);
    if (t == IPK_F32 && w * h > 3) {   /* the edges of [0, 1], outside it, and NaN */
        *(float *)tu_px(&src, 0, 0, 0) = 1.0f;
        *(float *)tu_px(&src, 1 % w, 1 % h, 0) = -0.25f;
        *(float *)tu_px(&src, w - 1, h - 1, ch - 1) = NAN;
        *(float *)tu_px(&src, w / 2, h / 2, 0) = 3.0f;
    }
    size_t n = (size_t)ch * bins;
    uint64_t *want = calloc(n, sizeof *want), *got = malloc(n * sizeof *got), *got3 = malloc(n * sizeof *got3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                double v = tu_get(&src, x, y, c);
                if (!isnan(v)) want[(size_t)c * bins + ref_bin(v, t, bins)]++;
            }
    memset(got, 0xab, n * sizeof *got);
    int rc = ipk_histogram_cpu(&src, bins, got, 1);
    CHECK(rc == IPK_OK && !memcmp(got, want, n * sizeof *got), "%dx%dx%d dtype %d bins=%d: counts differ", w, h, ch,
          t, bins);
    for (int threads = 2; threads <= 3; threads++) {
        rc = ipk_histogram_cpu(&src, bins, got3, threads);
        CHECK(rc == IPK_OK && !memcmp(got3, want, n * sizeof *got), "%dx%d bins=%d threads=%d differ", w, h, bins,
              threads);
    }
    free(want);
    free(got);
    free(got3);
    tu_img_free(&src);
}

/* U8 runs of one value (all counted by the same counters) and rows of long equal stretches,
 * where interleaved sub-histograms and 8-byte loads could drop or double a count. */
static void check_runs(void)
{
    for (int ch = 1; ch <= 4; ch += 3) {
        const int w = 263, h = 70, bins = 7;
        ipk_img img = tu_img_zeros(w, h, ch, IPK_U8, 5);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int c = 0; c < ch; c++) *(uint8_t *)tu_px(&img, x, y, c) = (uint8_t)(y < h / 2 ? 200 : x / 40 + c);
        uint64_t want[4 * 7] = { 0 }, got[4 * 7];
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int c = 0; c < ch; c++) want[c * bins + *(uint8_t *)tu_px(&img, x, y, c) * bins / 256]++;
        for (int threads = 1; threads <= 3; threads++) {
            int rc = ipk_histogram_cpu(&img, bins, got, threads);
            CHECK(rc == IPK_OK && !memcmp(got, want, (size_t)ch * bins * sizeof *got),
                  "runs of one value, %d channels, %d threads: counts differ", ch, threads);
        }
        tu_img_free(&img);
    }
}

static void check_kernel(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 17 }, { 17, 1 }, { 7, 5 }, { 37, 23 }, { 101, 61 } };
    static const int bin_counts[] = { 1, 7, 256, 1000 };
    const ipk_dtype types[] = { IPK_U8, IPK_U16, IPK_F32 };
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = 0; t < 3; t++)
            for (int ch = 1; ch <= 4; ch++, seed++)
                check_counts(sizes[s][0], sizes[s][1], ch, types[t], bin_counts[seed % 4], seed);
    check_counts(64, 33, 1, IPK_U16, 65536, 99);
    check_counts(31, 9, 3, IPK_F32, 65536, 98);
    check_runs();
    uint64_t c[4];
    ipk_img bad = tu_img_zeros(3, 3, 1, IPK_U8, 0);
    CHECK(ipk_histogram_cpu(&bad, 0, c, 1) == IPK_EINVAL, "bins=0 accepted");
    tu_img_free(&bad);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Runs the stage on img with out/plot patterns; input_path gives {stem}. */
static int run_stage(const ipk_img *img, int bins, const char *out, const char *plot, const char *input_path,
                     ip_image *result, char *err, size_t errlen)
{
    const ip_stage *st = imgpipe_stage();
    ip_value args[3];
    memset(args, 0, sizeof args);
    args[0].i = bins;
    args[1].s = out;
    args[2].s = plot;
    void *state = NULL;
    if (st->create(args, &state, err, errlen) != IP_OK) return -1;
    ip_shape shape = { img->width, img->height, img->channels, (ip_dtype)img->dtype }, out_shape;
    ip_needs needs = { 0, 0, 0 };
    int rc = st->plan(state, &shape, &out_shape, &needs, err, errlen);
    CHECK(rc == IP_OK && !memcmp(&out_shape, &shape, sizeof shape) && needs.halo == 0, "plan keeps the shape");
    ip_image in = { img->data, img->stride, shape, 0 };
    void *scratch = malloc(needs.scratch_bytes);
    ip_exec ex = { NULL, 2, input_path, scratch, needs.scratch_bytes, err, errlen };
    rc = st->run_cpu(state, &in, result, &ex);
    free(scratch);
    st->destroy(state);
    return rc;
}

static void check_csv(void)
{
    /* 3x2 RGB, 4 bins: bin = v * 4 / 256 */
    static const uint8_t px[2][9] = { { 0, 63, 64, 255, 128, 0, 200, 199, 1 }, { 10, 20, 30, 127, 191, 192, 64, 64, 64 } };
    ipk_img img = tu_img_zeros(3, 2, 3, IPK_U8, 5);
    for (int y = 0; y < 2; y++) memcpy(tu_px(&img, 0, y, 0), px[y], 9);
    ipk_img copy = tu_img_zeros(3, 2, 3, IPK_U8, 1);
    ip_image result = { copy.data, copy.stride, { 3, 2, 3, IP_U8 }, 0 };
    char err[256] = "", pattern[512], path[512];
    snprintf(pattern, sizeof pattern, "%s/{stem}-x.csv", tu_tmpdir());
    int rc = run_stage(&img, 4, pattern, "", "/some/folder/photo.v2.png", &result, err, sizeof err);
    CHECK(rc == IP_OK, "run: %s", err);
    snprintf(path, sizeof path, "%s/photo.v2-x.csv", tu_tmpdir());
    const char *csv = read_file(path);
    const char *want = "bin,r,g,b\n0,2,2,3\n1,2,1,2\n2,0,2,0\n3,2,1,1\n";
    CHECK(csv && !strcmp(csv, want), "csv:\n%s\nwant:\n%s", csv ? csv : "(missing)", want);
    CHECK(tu_max_diff(&img, &copy) == 0, "image passed through changed");

    /* in == out, one channel, no input path: {stem} is "image" */
    ipk_img gray = tu_img_zeros(2, 2, 1, IPK_U16, 2);
    *(uint16_t *)tu_px(&gray, 1, 1, 0) = 65535;
    ip_image same = { gray.data, gray.stride, { 2, 2, 1, IP_U16 }, 0 };
    snprintf(pattern, sizeof pattern, "%s/{stem}.csv", tu_tmpdir());
    rc = run_stage(&gray, 2, pattern, "", NULL, &same, err, sizeof err);
    snprintf(path, sizeof path, "%s/image.csv", tu_tmpdir());
    csv = read_file(path);
    CHECK(rc == IP_OK && csv && !strcmp(csv, "bin,count\n0,3\n1,1\n"), "gray csv: %s", csv ? csv : err);
    CHECK(*(uint16_t *)tu_px(&gray, 1, 1, 0) == 65535, "in-place run changed the image");

    /* gray + alpha header; a folder that does not exist fails cleanly */
    ipk_img ga = tu_img_zeros(1, 1, 2, IPK_U8, 0);
    ip_image ga_out = { ga.data, ga.stride, { 1, 1, 2, IP_U8 }, 0 };
    snprintf(pattern, sizeof pattern, "%s/ga.csv", tu_tmpdir());
    rc = run_stage(&ga, 1, pattern, "", "ga.png", &ga_out, err, sizeof err);
    csv = read_file(pattern);
    CHECK(rc == IP_OK && csv && !strcmp(csv, "bin,gray,alpha\n0,1,1\n"), "gray+alpha csv: %s", csv ? csv : err);
    snprintf(pattern, sizeof pattern, "%s/no/such/dir/h.csv", tu_tmpdir());
    rc = run_stage(&ga, 1, pattern, "", "ga.png", &ga_out, err, sizeof err);
    CHECK(rc == IP_EIO && strstr(err, "cannot write") && strstr(err, "h.csv"), "unwritable: rc %d %s", rc, err);
    tu_img_free(&img);
    tu_img_free(&copy);
    tu_img_free(&gray);
    tu_img_free(&ga);
}

/* Decodes a PNG as RGB and counts dark (axes, text) and red (bars) pixels; -1 on error. */
static int decode_png(const char *path, png_uint_32 *w, png_uint_32 *h, long *dark, long *red)
{
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&im, path)) return -1;
    im.format = PNG_FORMAT_RGB;
    unsigned char *buf = malloc(PNG_IMAGE_SIZE(im));
    if (!buf || !png_image_finish_read(&im, NULL, buf, 0, NULL)) {
        free(buf);
        return -1;
    }
    *w = im.width;
    *h = im.height;
    *dark = *red = 0;
    for (size_t i = 0; i < (size_t)im.width * im.height; i++) {
        const unsigned char *p = buf + i * 3;
        *dark += p[0] < 100 && p[1] < 100 && p[2] < 100;
        *red += p[0] > p[1] + 60 && p[0] > p[2] + 60;
    }
    free(buf);
    return 0;
}

static void check_plot(void)
{
    tu_rng rng;
    tu_seed(&rng, 7);
    ipk_img img = tu_img_random(64, 48, 3, IPK_U8, 3, &rng);
    for (int y = 0; y < 48; y++)   /* one tall red bar at bin 0 */
        for (int x = 0; x < 64; x++) *(uint8_t *)tu_px(&img, x, y, 0) = 3;
    ip_image out = { img.data, img.stride, { 64, 48, 3, IP_U8 }, 0 };
    char err[256] = "", csv[512], plot[512], path[512];
    snprintf(csv, sizeof csv, "%s/{stem}.csv", tu_tmpdir());
    snprintf(plot, sizeof plot, "%s/{stem}.plot.png", tu_tmpdir());
    int rc = run_stage(&img, 32, csv, plot, "dir/rgb.tif", &out, err, sizeof err);
    CHECK(rc == IP_OK, "plot run: %s", err);
    snprintf(path, sizeof path, "%s/rgb.plot.png", tu_tmpdir());
    png_uint_32 w = 0, h = 0;
    long dark = 0, red = 0;
    CHECK(decode_png(path, &w, &h, &dark, &red) == 0, "plot does not decode");
    CHECK(w == 800 && h == 400, "plot size %ux%u", (unsigned)w, (unsigned)h);
    CHECK(dark > 1000, "axes and labels missing: %ld dark pixels", dark);
    CHECK(red > 1000, "red bars missing: %ld red pixels", red);

    ipk_img gray = tu_img_random(33, 17, 1, IPK_U16, 2, &rng);
    ip_image gout = { gray.data, gray.stride, { 33, 17, 1, IP_U16 }, 0 };
    snprintf(plot, sizeof plot, "%s/gray.png", tu_tmpdir());
    rc = run_stage(&gray, 65536, "", plot, NULL, &gout, err, sizeof err);
    CHECK(rc == IP_OK && decode_png(plot, &w, &h, &dark, &red) == 0 && dark > 1000 && red == 0,
          "gray plot: rc %d dark %ld red %ld %s", rc, dark, red, err);
    tu_img_free(&img);
    tu_img_free(&gray);
}

static void check_stem(void)
{
    char stem[64];
    hist_stem("a/b/c.d/file.tar.png", stem, sizeof stem);
    CHECK(!strcmp(stem, "file.tar"), "stem %s", stem);
    hist_stem("noext", stem, sizeof stem);
    CHECK(!strcmp(stem, "noext"), "stem %s", stem);
    hist_stem("dir/.hidden", stem, sizeof stem);
    CHECK(!strcmp(stem, ".hidden"), "stem %s", stem);
    char *p = hist_expand("{stem}/{stem}.csv", "x/y.png");
    CHECK(p && !strcmp(p, "y/y.csv"), "expand %s", p ? p : "(null)");
    free(p);
}

int main(void)
{
    check_kernel();
    check_csv();
    check_plot();
    check_stem();
    return tu_finish();
}
