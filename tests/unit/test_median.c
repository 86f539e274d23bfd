#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static const char *border_names[] = { "replicate", "reflect101", "zero", "shrink" };
static const char *dtype_names[] = { "", "u8", "u16", "f32" };

/* Independent of kernels/common/border.h: -1 means "zero value" or "not counted". */
static int ref_index(int i, int n, ipk_border border)
{
    if (i >= 0 && i < n) return i;
    if (border == IPK_REPLICATE) return i < 0 ? 0 : n - 1;
    if (border != IPK_REFLECT101) return -1;
    if (n == 1) return 0;
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
    return i;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts the window and takes the ((n-1)/2)-th value. */
static double ref_median(const ipk_img *src, int x, int y, int c, int r, ipk_border border, double *buf)
{
    int n = 0;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++) {
            int sx = ref_index(x + dx, src->width, border), sy = ref_index(y + dy, src->height, border);
            if (sx >= 0 && sy >= 0) buf[n++] = tu_get(src, sx, sy, c);
            else if (border == IPK_ZERO) buf[n++] = 0.0;
        }
    qsort(buf, (size_t)n, sizeof *buf, cmp_double);
    return buf[(n - 1) / 2];
}

/* Few distinct values, so that ties are everywhere. */
static void make_ties(ipk_img *img)
{
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++)
            for (int c = 0; c < img->channels; c++) {
                void *p = tu_px(img, x, y, c);
                if (img->dtype == IPK_U8) *(uint8_t *)p = (uint8_t)(*(uint8_t *)p % 3 * 100);
                else if (img->dtype == IPK_U16) *(uint16_t *)p = (uint16_t)(*(uint16_t *)p % 3 * 30000);
                else *(float *)p = (float)(int)(*(float *)p * 3.0f) * 0.25f;
            }
}

static int count_mismatches(const ipk_img *src, const ipk_img *dst, int r, ipk_border border,
                            int *first_x, int *first_y)
{
    double *buf = malloc(sizeof(double) * (size_t)(2 * r + 1) * (size_t)(2 * r + 1));
    int bad = 0;
    for (int y = 0; y < src->height; y++)
        for (int x = 0; x < src->width; x++)
            for (int c = 0; c < src->channels; c++)
                if (tu_get(dst, x, y, c) != ref_median(src, x, y, c, r, border, buf) && bad++ == 0) {
                    *first_x = x;
                    *first_y = y;
                }
    free(buf);
    return bad;
}

static void check_case(int w, int h, int ch, ipk_dtype t, int r, ipk_border border, int ties,
                       uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img src = tu_img_random(w, h, ch, t, 3 + (int)(seed % 13), &rng);
    if (ties) make_ties(&src);
    ipk_img dst = tu_img_zeros(w, h, ch, t, 5);
    int threads = w * h < 4096 ? 1 : 2;   /* tiny images: spare the thread start-up */
    int rc = ipk_median_cpu(&src, &dst, r, border, threads);
    int fx = -1, fy = -1;
    int bad = rc == IPK_OK ? count_mismatches(&src, &dst, r, border, &fx, &fy) : -1;
    CHECK(rc == IPK_OK && bad == 0, "%dx%d c%d %s r=%d %s%s: rc %d, %d wrong values, first at (%d,%d)",
          w, h, ch, dtype_names[t], r, border_names[border], ties ? " ties" : "", rc, bad, fx, fy);
    tu_img_free(&src);
    tu_img_free(&dst);
}

/* Every dtype, channel count and border at small radii on small and odd sizes. */
static void test_small_images(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 7, 5 }, { 2, 3 }, { 5, 4 }, { 37, 23 } };
    static const int radii[] = { 1, 2, 3, 4, 7 };
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int t = IPK_U8; t <= IPK_F32; t++)
            for (int ch = 1; ch <= 4; ch++)
                for (int b = 0; b < 4; b++)
                    for (size_t k = 0; k < sizeof radii / sizeof radii[0]; k++)
                        if (sizes[s][0] < 30 || radii[k] <= 3)   /* keeps the reference loops quick */
                                check_case(sizes[s][0], sizes[s][1], ch, (ipk_dtype)t, radii[k],
                                       (ipk_border)b, 0, seed++);
}

static void test_ties_and_prime_widths(void)
{
    uint64_t seed = 1000;
    for (int t = IPK_U8; t <= IPK_F32; t++)
        for (int b = 0; b < 4; b++)
            for (int r = 1; r <= 3; r++) {
                check_case(101, 61, 1 + (r + b) % 4, (ipk_dtype)t, r, (ipk_border)b, 0, seed++);
                check_case(53, 29, 1 + b % 4, (ipk_dtype)t, r, (ipk_border)b, 1, seed++);
            }
}

/* The 8-bit histogram path in tiles of 512 x 256: images wider and taller than one tile, and
 * radii larger than the image. */
static void test_u8_histogram_tiles(void)
{
    check_case(531, 263, 1, IPK_U8, 3, IPK_REPLICATE, 0, 77);
    check_case(517, 259, 2, IPK_U8, 4, IPK_SHRINK, 0, 78);
    check_case(515, 258, 1, IPK_U8, 5, IPK_REFLECT101, 1, 79);
    check_case(513, 257, 1, IPK_U8, 6, IPK_ZERO, 0, 80);
    for (int b = 0; b < 4; b++) {
        check_case(7, 5, 3, IPK_U8, 25, (ipk_border)b, 0, 90 + (uint64_t)b);
        check_case(60, 3, 1, IPK_U8, 12, (ipk_border)b, 1, 95 + (uint64_t)b);
    }
}

static void test_thread_counts_agree(void)
{
    static const int radii[] = { 1, 2, 5 };
    tu_rng rng;
    tu_seed(&rng, 4242);
    for (int t = IPK_U8; t <= IPK_F32; t++)
        for (size_t k = 0; k < sizeof radii / sizeof radii[0]; k++) {
            int r = radii[k];
            ipk_img src = tu_img_random(97, 531, 2, (ipk_dtype)t, 7, &rng);
            ipk_img d1 = tu_img_zeros(97, 531, 2, (ipk_dtype)t, 0);
            ipk_img d2 = tu_img_zeros(97, 531, 2, (ipk_dtype)t, 3);
            ipk_img d3 = tu_img_zeros(97, 531, 2, (ipk_dtype)t, 1);
            int rc1 = ipk_median_cpu(&src, &d1, r, IPK_SHRINK, 1);
            int rc2 = ipk_median_cpu(&src, &d2, r, IPK_SHRINK, 2);
            int rc3 = ipk_median_cpu(&src, &d3, r, IPK_SHRINK, 3);
            CHECK(rc1 == IPK_OK && rc2 == IPK_OK && rc3 == IPK_OK, "%s r=%d: rc %d %d %d",
                  dtype_names[t], r, rc1, rc2, rc3);
            CHECK(tu_max_diff(&d1, &d2) == 0.0 && tu_max_diff(&d1, &d3) == 0.0,
                  "%s r=%d: 1, 2 and 3 threads differ", dtype_names[t], r);
            tu_img_free(&src);
            tu_img_free(&d1);
            tu_img_free(&d2);
            tu_img_free(&d3);
        }
}

/* A lone outlier vanishes and a constant image stays constant: a known answer by hand. */
static void test_known_values(void)
{
    ipk_img src = tu_img_zeros(5, 5, 1, IPK_U8, 2), dst = tu_img_zeros(5, 5, 1, IPK_U8, 0);
    memset(src.data, 40, (size_t)src.stride * 5);
    *(uint8_t *)tu_px(&src, 2, 2, 0) = 255;
    CHECK(ipk_median_cpu(&src, &dst, 1, IPK_REPLICATE, 1) == IPK_OK, "run");
    CHECK(tu_get(&dst, 2, 2, 0) == 40.0, "outlier kept: %g", tu_get(&dst, 2, 2, 0));
    /* zero border: a 3x3 corner window holds 4 image values and 5 zeros */
    CHECK(ipk_median_cpu(&src, &dst, 1, IPK_ZERO, 1) == IPK_OK, "run");
    CHECK(tu_get(&dst, 0, 0, 0) == 0.0 && tu_get(&dst, 1, 0, 0) == 40.0, "zero corner %g, edge %g",
          tu_get(&dst, 0, 0, 0), tu_get(&dst, 1, 0, 0));
    tu_img_free(&src);
    tu_img_free(&dst);
}

static void test_bad_arguments(void)
{
    tu_rng rng;
    tu_seed(&rng, 5);
    ipk_img src = tu_img_random(8, 6, 1, IPK_U8, 0, &rng), dst = tu_img_zeros(8, 6, 1, IPK_U8, 0);
    ipk_img wrong = tu_img_zeros(8, 7, 1, IPK_U8, 0), u16 = tu_img_zeros(8, 6, 1, IPK_U16, 0);
    CHECK(ipk_median_cpu(&src, &wrong, 1, IPK_REPLICATE, 1) == IPK_EINVAL, "height mismatch accepted");
    CHECK(ipk_median_cpu(&src, &u16, 1, IPK_REPLICATE, 1) == IPK_EINVAL, "dtype mismatch accepted");
    CHECK(ipk_median_cpu(&src, &src, 1, IPK_REPLICATE, 1) == IPK_EINVAL, "in-place accepted");
    CHECK(ipk_median_cpu(&src, &dst, -1, IPK_REPLICATE, 1) == IPK_EINVAL, "negative radius accepted");
    CHECK(ipk_median_cpu(&src, &dst, 1, (ipk_border)7, 1) == IPK_EINVAL, "unknown border accepted");
    src.stride = 3;
    CHECK(ipk_median_cpu(&src, &dst, 1, IPK_REPLICATE, 1) == IPK_EINVAL, "short stride accepted");
    /* refused before any pixel is read, so the small buffers stand in for huge rows */
    ipk_img wide_src = src, wide_dst = dst;
    wide_src.width = wide_dst.width = 1 << 28;
    wide_src.channels = wide_dst.channels = 4;
    wide_src.stride = wide_dst.stride = (ptrdiff_t)1 << 30;
    CHECK(ipk_median_cpu(&wide_src, &wide_dst, 1, IPK_REPLICATE, 1) == IPK_ERANGE,
          "row of 2^30 values accepted");
    tu_img_free(&src);
    tu_img_free(&dst);
    tu_img_free(&wrong);
    tu_img_free(&u16);
}

int main(void)
{
    test_known_values();
    test_bad_arguments();
    test_small_images();
    test_ties_and_prime_widths();
    test_u8_histogram_tiles();
    test_thread_counts_agree();
    return tu_finish();
}
