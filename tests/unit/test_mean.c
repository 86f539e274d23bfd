#include <math.h>
#include <string.h>
#include "testutil.h"
#include "../../kernels/common/border.h"

/* Plain window loop: sum the in-window values, divide as ipk.h says. */
static double ref_mean(const ipk_img *img, int x, int y, int c, int r, int border)
{
    double sum = 0;
    long long isum = 0, count = 0;
    for (int dy = -r; dy <= r; dy++)
        for (int dx = -r; dx <= r; dx++) {
            int sx = ipk_border_index(x + dx, img->width, border);
            int sy = ipk_border_index(y + dy, img->height, border);
            if (sx < 0 || sy < 0) {
                if (border == IPK_ZERO) count++;
                continue;
            }
            count++;
            double v = tu_get(img, sx, sy, c);
            sum += v;
            isum += (long long)v;
        }
    if (img->dtype == IPK_F32) return sum / (double)count;
    return (double)((isum + count / 2) / count);
}

static const char *dtype_name(ipk_dtype t) { return t == IPK_U8 ? "u8" : t == IPK_U16 ? "u16" : "f32"; }

static int same_bytes(const ipk_img *a, const ipk_img *b)
{
    size_t row = (size_t)a->width * a->channels * (a->dtype == IPK_U8 ? 1 : a->dtype == IPK_U16 ? 2 : 4);
    for (int y = 0; y < a->height; y++)
        if (memcmp(tu_px(a, 0, y, 0), tu_px(b, 0, y, 0), row)) return 0;
    return 1;
}

static void check_case(int w, int h, int ch, ipk_dtype t, int r, int border, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img src = tu_img_random(w, h, ch, t, 3 + (int)(seed % 5), &rng);
    ipk_img dst = tu_img_zeros(w, h, ch, t, 5);
    ipk_img dst3 = tu_img_zeros(w, h, ch, t, 0);
    int rc = ipk_mean_cpu(&src, &dst, r, (ipk_border)border, 1);
    int rc3 = ipk_mean_cpu(&src, &dst3, r, (ipk_border)border, 3);
    CHECK(rc == IPK_OK && rc3 == IPK_OK, "rc %d %d", rc, rc3);
    double worst = 0;
    int wx = 0, wy = 0, wc = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                double d = fabs(tu_get(&dst, x, y, c) - ref_mean(&src, x, y, c, r, border));
                if (!(d <= worst)) { worst = d; wx = x; wy = y; wc = c; }
            }
    double tol = t == IPK_F32 ? 1e-5 : 0;
    CHECK(worst <= tol, "%dx%dx%d %s r=%d border=%d: diff %g at (%d,%d,%d)", w, h, ch, dtype_name(t), r,
          border, worst, wx, wy, wc);
    CHECK(same_bytes(&dst, &dst3), "%dx%dx%d %s r=%d border=%d: threads 1 vs 3 differ", w, h, ch,
          dtype_name(t), r, border);
    tu_img_free(&src);
    tu_img_free(&dst);
    tu_img_free(&dst3);
}

static void check_sizes(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 17 }, { 13, 1 }, { 7, 5 }, { 37, 23 }, { 101, 61 } };
    static const int radii[] = { 1, 2, 3, 6 };
    static const ipk_dtype dtypes[] = { IPK_U8, IPK_U16, IPK_F32 };
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int ti = 0; ti < 3; ti++)
            for (int ch = 1; ch <= 4; ch++)
                for (int border = 0; border < 4; border++)
                    for (int ri = 0; ri < 4; ri++)
                        check_case(sizes[s][0], sizes[s][1], ch, dtypes[ti], radii[ri], border, seed++);
}

/* Several strips (64+ rows each), radii larger than the image, the largest radius. */
static void check_tall_and_wide_windows(void)
{
    static const ipk_dtype dtypes[] = { IPK_U8, IPK_U16, IPK_F32 };
    for (int ti = 0; ti < 3; ti++)
        for (int border = 0; border < 4; border++) {
            check_case(23, 211, 2, dtypes[ti], 1, border, 900 + border);
            check_case(19, 300, 1, dtypes[ti], 40, border, 910 + border);
            check_case(9, 6, 3, dtypes[ti], 100, border, 920 + border);
        }
}

/* Saturated input at the largest window: the sums must not overflow. */
static void check_extremes(void)
{
    for (int border = 0; border < 4; border++) {
        ipk_img s8 = tu_img_zeros(211, 203, 1, IPK_U8, 1), d8 = tu_img_zeros(211, 203, 1, IPK_U8, 0);
        ipk_img s16 = tu_img_zeros(211, 203, 1, IPK_U16, 2), d16 = tu_img_zeros(211, 203, 1, IPK_U16, 0);
        for (int y = 0; y < 203; y++)
            for (int x = 0; x < 211; x++) {
                *(uint8_t *)tu_px(&s8, x, y, 0) = 255;
                *(uint16_t *)tu_px(&s16, x, y, 0) = 65535;
            }
        CHECK(ipk_mean_cpu(&s8, &d8, 100, (ipk_border)border, 2) == IPK_OK, "rc");
        CHECK(ipk_mean_cpu(&s16, &d16, 100, (ipk_border)border, 2) == IPK_OK, "rc");
        /* zero border: the centre sees the whole 201x201 window inside the image */
        int x = border == IPK_ZERO ? 105 : 0, y = border == IPK_ZERO ? 101 : 0;
        CHECK(tu_get(&d8, x, y, 0) == 255, "u8 border %d: %g", border, tu_get(&d8, x, y, 0));
        CHECK(tu_get(&d16, x, y, 0) == 65535, "u16 border %d: %g", border, tu_get(&d16, x, y, 0));
        tu_img_free(&s8);
        tu_img_free(&d8);
        tu_img_free(&s16);
        tu_img_free(&d16);
    }
}

static void check_bad_arguments(void)
{
    tu_rng rng;
    tu_seed(&rng, 5);
    ipk_img src = tu_img_random(8, 8, 1, IPK_U8, 0, &rng);
    ipk_img dst = tu_img_zeros(8, 8, 1, IPK_U8, 0), d16 = tu_img_zeros(8, 8, 1, IPK_U16, 0);
    ipk_img small = tu_img_zeros(7, 8, 1, IPK_U8, 0);
    CHECK(ipk_mean_cpu(&src, &dst, 0, IPK_REPLICATE, 1) == IPK_EINVAL, "radius 0");
    CHECK(ipk_mean_cpu(&src, &dst, 101, IPK_REPLICATE, 1) == IPK_EINVAL, "radius 101");
    CHECK(ipk_mean_cpu(&src, &d16, 1, IPK_REPLICATE, 1) == IPK_EINVAL, "dtype mismatch");
    CHECK(ipk_mean_cpu(&src, &small, 1, IPK_REPLICATE, 1) == IPK_EINVAL, "size mismatch");
    CHECK(ipk_mean_cpu(&src, &dst, 1, (ipk_border)7, 1) == IPK_EINVAL, "bad border");
    tu_img_free(&src);
    tu_img_free(&dst);
    tu_img_free(&d16);
    tu_img_free(&small);
}

int main(void)
{
    check_sizes();
    check_tall_and_wide_windows();
    check_extremes();
    check_bad_arguments();
    return tu_finish();
}
